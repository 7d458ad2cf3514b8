/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_oci_bundle.c: libFuzzer target for bulkhead-oci's bundle reader
 * (oci/bundle.c). A bundle's config.json carries what a Kubernetes pod's author writes (args,
 * env, mounts, annotations), so the reader must hold for any bytes. The input is config.json
 * itself (root.path "/" exists). Checks, beyond ASan and UBSan: a load either succeeds or says
 * why; what a successful load returns keeps every bound the session relies on (argument and
 * environment counts and sizes, no newline in the environment, an absolute cwd, ids below
 * 65536, guest RAM and vCPUs in range, at most OCI_BINDS_MAX binds with absolute sources). */
#include "oci/bundle.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void check(const struct oci_bundle *b)
{
	const struct image_config *c = &b->proc.cfg;
	size_t bytes = 0;
	if (c->ncmd < 1 || c->ncmd > IMAGE_CMD_MAX || c->cmd[c->ncmd] || c->nenv > IMAGE_ENV_MAX ||
	    c->env[c->nenv] || c->cwd[0] != '/' || c->uid >= 65536 || c->gid >= 65536 ||
	    c->ngids > IMAGE_GIDS_MAX)
		abort();
	for (size_t i = 0; i < c->ncmd; i++)
		if (strlen(c->cmd[i]) > OCI_PROCESS_BYTES)
			abort();
	for (size_t i = 0; i < c->nenv; i++) {
		bytes += strlen(c->env[i]) + 1;
		if (strchr(c->env[i], '\n') || !strchr(c->env[i], '=') || c->env[i][0] == '=')
			abort();
	}
	if (bytes > IMAGE_ENV_BYTES || b->mem_mib < OCI_MEM_MIN_MIB ||
	    b->mem_mib > OCI_MEM_MAX_MIB || b->cpus < 1 || b->cpus > OCI_CPUS_MAX ||
	    b->nbinds > OCI_BINDS_MAX)
		abort();
	for (size_t i = 0; i < b->nbinds; i++)
		if (b->binds[i].src[0] != '/' || b->binds[i].dest[0] != '/')
			abort();
	const char *paths[] = { b->broker, b->vault, b->ca_file, b->audit };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (paths[i] && paths[i][0] != '/')
			abort();
	if (b->scope && b->scope[0] != '/' && b->scope[0] != '{')
		abort();
}

static char path[96];

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz-oci-bundle.%d", (int)getpid());
		snprintf(path, sizeof(path), "%s/config.json", dir);
		mkdir(dir, 0700);
		atexit(cleanup);
	}
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fwrite(data, 1, size, f);
	fclose(f);
	static struct oci_bundle b;
	char err[512] = "";
	if (oci_bundle_load(&b, dir, err, sizeof(err)) == 0)
		check(&b);
	else if (!err[0])
		abort(); /* a refusal always says why */
	oci_bundle_free(&b);
	return 0;
}
