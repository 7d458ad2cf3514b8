/* SPDX-License-Identifier: Apache-2.0 */
/* serve/boot.c: a session booted cold: its work directory (the create's, or one of our own
 * under --state), an inline scope written to a file, and the request handed to `bulkhead
 * start --request -` as the API's own JSON on its stdin (session/request_json.h), so the API
 * and the CLI check one field one way; then the supervisor (serve/spawn.c). */
#include "session/broker_dev.h"
#include "lib/io.h"
#include "serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A new directory of our own under <state>/work. */
int serve_owned_work(char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/work/XXXXXX", serve.state);
	if (n < 0 || (size_t)n >= len || !mkdtemp(buf))
		return -1;
	return 0;
}

int serve_scope_write(struct serve_session *s, json_t *scope, char *why, size_t whylen)
{
	int n = snprintf(s->scope_file, sizeof(s->scope_file), "%s/scopes/XXXXXX", serve.state);
	int fd = n > 0 && (size_t)n < sizeof(s->scope_file) ? mkostemp(s->scope_file, O_CLOEXEC)
							    : -1;
	if (fd < 0 || json_dumpfd(scope, fd, JSON_COMPACT) < 0) {
		snprintf(why, whylen, "scope file: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The request `bulkhead start` is handed (c NULL: a pool guest): the API's own fields, the
 * boot-time ones only (environment and timeout are bound by us after boot), with the work
 * directory and the scope as files. The supervisor checks it with the table it checks its
 * options with (session/request_json.h). NULL when out of memory. */
static json_t *start_request(const struct serve_create *c, const struct serve_pool *pool,
			     const char *scope)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = 0;
	const char *image = c ? c->image : pool->image[0] ? pool->image : NULL;
	const char *keys[] = { "image", "scope", "vault", "ca_file", "broker", "audit" };
	const char *vals[] = { image,
			       scope,
			       c ? c->vault : NULL,
			       c ? c->ca_file : NULL,
			       c ? c->broker : NULL,
			       c ? c->audit : NULL };
	for (size_t i = 0; i < 6; i++)
		if (vals[i])
			bad |= json_object_set_new(o, keys[i], json_string(vals[i]));
	const char *nkeys[] = { "mem_mib", "cpus", "mem_limit_mib" };
	unsigned nvals[] = { c ? c->mem_mib : pool->mem_mib, c ? c->cpus : pool->cpus,
			     c ? c->mem_limit_mib : 0 };
	for (size_t i = 0; i < 3; i++)
		if (nvals[i])
			bad |= json_object_set_new(o, nkeys[i], json_integer(nvals[i]));
	if (c && c->work_rules)
		bad |= json_object_set(o, "work_rules", c->work_rules);
	if (c && c->share_secrets)
		bad |= json_object_set_new(o, "share_secrets", json_string(c->share_secrets));
	if (c && c->share_allow)
		bad |= json_object_set(o, "share_secrets_allow", c->share_allow);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The request as a sealed file of its own, read from the start (the supervisor's stdin). */
static int request_fd(json_t *req)
{
	char *text = json_dumps(req, JSON_COMPACT);
	int fd = text ? memfd_create("bulkhead-request", MFD_CLOEXEC | MFD_ALLOW_SEALING) : -1;
	size_t n = text ? strlen(text) : 0;
	if (fd >= 0 && (io_write_full(fd, text, n) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
			fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK) < 0)) {
		close(fd);
		fd = -1;
	}
	free(text);
	return fd;
}

/* Boots a session cold (c NULL: a guest of pool). 0, or -1 with why; s stays in the table,
 * ended, for the caller to clean up. */
int serve_boot(struct serve_session *s, const struct serve_create *c, const struct serve_pool *pool,
	       char *why, size_t whylen)
{
	const char *scope = c ? c->scope_path : NULL;
	if (c && c->work) {
		snprintf(s->work, sizeof(s->work), "%s", c->work);
		s->work_ro = c->work_ro;
	} else if (serve_owned_work(s->work, sizeof(s->work)) < 0) {
		snprintf(why, whylen, "work directory under %s: %s", serve.state, strerror(errno));
		return -1;
	} else {
		s->work_owned = true;
	}
	if (c && c->scope_inline) {
		if (serve_scope_write(s, c->scope_inline, why, whylen) < 0)
			return -1;
		scope = s->scope_file;
	}
	if (c) {
		snprintf(s->image, sizeof(s->image), "%s", c->image ? c->image : "");
		s->mem_mib = c->mem_mib ? c->mem_mib : s->mem_mib;
		s->cpus = c->cpus ? c->cpus : s->cpus;
		s->broker = c->broker ? "shared" : scope ? "private" : NULL;
	} else {
		snprintf(s->image, sizeof(s->image), "%s", pool->image);
		s->mem_mib = pool->mem_mib ? pool->mem_mib : s->mem_mib;
		s->cpus = pool->cpus ? pool->cpus : s->cpus;
	}
	json_t *req = start_request(c, pool, scope);
	int fd = -1;
	if (req && (json_object_set_new(req, "work", json_string(s->work)) < 0 ||
		    json_object_set_new(req, "work_ro", json_boolean(s->work_ro)) < 0 ||
		    (fd = request_fd(req)) < 0)) {
		snprintf(why, whylen, "the supervisor's request: %s", strerror(errno));
		json_decref(req);
		return -1;
	}
	json_decref(req);
	if (!req) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	/* A pool guest waits for its scope and broker (session/session_bind.c, serve/bind.c). */
	char *args[7] = { "--request", "-" }, **a = args + 2;
	if (!c)
		*a++ = "--bind-later";
	if (serve.template)
		*a++ = "--template";
	if (serve.policy[0]) {
		*a++ = "--policy";
		*a++ = serve.policy;
	}
	int spawned = serve_spawn(s, args, fd, why, whylen);
	close(fd);
	if (spawned < 0)
		return -1;
	if (s->broker && !strcmp(s->broker, "private")) {
		if (c->audit)
			snprintf(s->audit, sizeof(s->audit), "%s", c->audit);
		else if (broker_audit_path(s->id, s->audit, sizeof(s->audit)) < 0)
			s->audit[0] = '\0';
	}
	return 0;
}
