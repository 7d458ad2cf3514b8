/* SPDX-License-Identifier: Apache-2.0 */
/* image/import.c: `bulkhead image import NAME FILE|DIR` — a docker-archive (`docker save`,
 * `podman save`), an OCI archive or an OCI layout directory, told apart by what it holds. skopeo
 * copies it into an OCI layout in our work directory and umoci unpacks that (whiteouts, hard
 * links and paths that try to leave the root are theirs to handle); the result is published only
 * whole, its device nodes removed. */
#include "image/image_internal.h"

#include "lib/mono.h"
#include "lib/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REF "bulkhead" /* the tag our copy gets in the work directory's layout */

static const char import_usage[] =
	"usage: bulkhead image import NAME FILE|DIR\n"
	"\n"
	"FILE is a docker-archive (docker save, podman save) or an OCI archive (tar, possibly\n"
	"compressed); DIR an OCI image layout. Which one is read from the content (manifest.json,\n"
	"oci-layout), not from the name. Layers are unpacked by umoci (--rootless when not root);\n"
	"device nodes are removed. The image's Env, WorkingDir, User and Entrypoint/Cmd become "
	"its\n"
	"config; HOME comes from its /etc/passwd when Env lacks it, PATH from the usual default.\n";

struct kind_scan {
	bool oci, docker;
};

static void scan_line(const char *s, void *arg)
{
	struct kind_scan *k = arg;
	if (strncmp(s, "./", 2) == 0)
		s += 2;
	if (strcmp(s, "oci-layout") == 0)
		k->oci = true;
	if (strcmp(s, "manifest.json") == 0)
		k->docker = true;
}

/* SRC as skopeo's transport:path, from what it holds. */
static int source_ref(const char *src, char *ref, size_t len, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;

	if (!realpath(src, path) || stat(path, &st) < 0)
		return errbuf_fail(err, errlen, -1, "%s: %s", src, strerror(errno));
	if (strlen(path) > IMAGE_STR_MAX - 32)
		return errbuf_fail(err, errlen, -1, "%s: the path is too long", src);
	if (strchr(path, ':'))
		return errbuf_fail(err, errlen, -1,
				   "%s: a path with ':' cannot be given to skopeo; link or move it",
				   path);
	if (S_ISDIR(st.st_mode)) {
		char lay[PATH_MAX + 16];
		snprintf(lay, sizeof(lay), "%s/oci-layout", path);
		if (stat(lay, &st) < 0 || !S_ISREG(st.st_mode))
			return errbuf_fail(err, errlen, -1,
					   "%s is a directory but not an OCI image layout (no "
					   "oci-layout file)",
					   path);
		snprintf(ref, len, "oci:%s", path);
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return errbuf_fail(err, errlen, -1, "%s is neither a file nor a directory", path);
	struct kind_scan k = { 0 };
	const char *argv[] = { "tar", "-tf", path, NULL };
	struct image_tool t = { .argv = argv, .out_fd = -1 };
	char why[256];
	if (image_tool_lines(&t, scan_line, &k, why, sizeof(why)) < 0)
		return errbuf_fail(err, errlen, -1, "%s is not a complete tar archive (%s)", path,
				   why);
	/* docker 25 and later write both: its manifest.json is the one every version has. */
	if (k.docker)
		snprintf(ref, len, "docker-archive:%s", path);
	else if (k.oci)
		snprintf(ref, len, "oci-archive:%s", path);
	else
		return errbuf_fail(err, errlen, -1,
				   "%s holds neither manifest.json (docker-archive) nor oci-layout "
				   "(OCI archive)",
				   path);
	return 0;
}

/* Copy, unpack, describe: everything that happens inside the work directory W. */
static int unpack(struct image_work *w, const char *ref, struct image_oci *o,
		  struct image_config *cfg, uint64_t *size, char *err, size_t errlen)
{
	char tmpdir[PATH_MAX + 16], layout[PATH_MAX + 16], dst[PATH_MAX + 32], image[PATH_MAX + 32];
	char bundle[PATH_MAX + 16], rootfs[PATH_MAX + 32];

	snprintf(tmpdir, sizeof(tmpdir), "%s/skopeo", w->dir);
	snprintf(layout, sizeof(layout), "%s/layout", w->dir);
	snprintf(dst, sizeof(dst), "oci:%s:" REF, layout);
	snprintf(image, sizeof(image), "%s:" REF, layout);
	snprintf(bundle, sizeof(bundle), "%s/bundle", w->dir);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
	if (mkdir(tmpdir, 0700) < 0)
		return errbuf_fail(err, errlen, -1, "%s: %s", tmpdir, strerror(errno));
	/* --tmpdir: an OCI archive is unpacked there, not in /var/tmp. */
	const char *copy[] = { "skopeo", "--tmpdir", tmpdir, "copy", ref, dst, NULL };
	const char *root_unpack[] = { "umoci", "unpack", "--image", image, bundle, NULL };
	const char *user_unpack[] = { "umoci", "unpack", "--rootless", "--image",
				      image,   bundle,	 NULL };
	char tmpenv[PATH_MAX + 32];
	snprintf(tmpenv, sizeof(tmpenv), "TMPDIR=%s", tmpdir);
	const char *env[] = { tmpenv, NULL };
	struct image_tool t = { .argv = copy, .out_fd = -1 };
	if (image_tool_run(&t, err, errlen) < 0 || image_oci_read(layout, REF, o, err, errlen) < 0)
		return -1;
	t.argv = geteuid() == 0 ? root_unpack : user_unpack;
	t.env = env; /* whatever umoci puts aside goes into our work directory too */
	if (image_tool_run(&t, err, errlen) < 0 ||
	    image_rootfs_scrub(rootfs, size, err, errlen) < 0 ||
	    image_oci_bundle_config(bundle, o, cfg, err, errlen) < 0)
		return -1;
	if (mkdirat(w->fd, "img", 0755) < 0 ||
	    renameat(w->fd, "bundle/rootfs", w->fd, "img/rootfs") < 0)
		return errbuf_fail(err, errlen, -1, "cannot move the root in %s: %s", w->dir,
				   strerror(errno));
	return 0;
}

static int import(struct image_store *s, const char *name, const char *ref, char *err,
		  size_t errlen)
{
	struct image_work w;
	struct image_oci o;
	struct image_config cfg = { 0 };
	struct image_meta m = { 0 };
	uint64_t t0;
	bool existed = false;
	int rc = -1;

	t0 = mono_ns();
	image_work_sweep(s);
	if (image_work_begin(s, "import", &w, err, errlen) < 0)
		return -1;
	if (unpack(&w, ref, &o, &cfg, &m.size, err, errlen) < 0)
		goto out;
	snprintf(m.digest, sizeof(m.digest), "%s", o.digest);
	snprintf(m.name, sizeof(m.name), "%s", name);
	snprintf(m.source, sizeof(m.source), "%s", ref);
	image_now(m.created);
	int img = openat(w.fd, "img", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int wr = img < 0 ? -1 : image_json_write(img, &m, &cfg, NULL, err, errlen);
	if (img >= 0)
		close(img);
	if (wr < 0 || image_work_commit(s, &w, o.digest + 7, name, &existed, err, errlen) < 0)
		goto out;
	image_say_done("imported", name, &m, t0, existed);
	rc = 0;
out:
	if (rc < 0)
		image_work_failed(s, &w, err, errlen);
	image_config_free(&cfg);
	image_work_end(&w);
	return rc;
}

int image_import_cmd(int argc, char **argv)
{
	char err[1024] = "", ref[IMAGE_STR_MAX + 1];
	struct image_store s;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(import_usage, stdout);
		return 0;
	}
	if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-') {
		fputs(import_usage, stderr);
		return 125;
	}
	if (image_name_check(argv[1], err, sizeof(err)) < 0 ||
	    source_ref(argv[2], ref, sizeof(ref), err, sizeof(err)) < 0 ||
	    image_store_open(&s, 1, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead image import: %s\n", err);
		return 125;
	}
	image_disk_budget(s.dir, IMAGE_DISK_MAX);
	int rc = import(&s, argv[1], ref, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "bulkhead image import: %s\n", err);
	image_store_close(&s);
	return rc < 0 ? (image_signal() ? 128 + image_signal() : 125) : 0;
}
