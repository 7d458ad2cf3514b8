/* SPDX-License-Identifier: Apache-2.0 */
/* image/build.c: `bulkhead image build NAME` — a Debian root made by mmdebstrap (minbase, the
 * packages asked for, docs, man pages and locales left out), its tar's SHA-256 the image's
 * digest, unpacked with its owners and attributes, device nodes removed, published whole. */
#include "image/image_internal.h"

#include "lib/mono.h"
#include "lib/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Files' times say nothing in an image: one fixed time (Debian 12's release) makes the same
 * recipe over the same mirror content give the same bytes. SOURCE_DATE_EPOCH overrides it. */
#define BUILD_EPOCH	 "1686355200"
#define MERGED_USR_HOOKS "/usr/share/mmdebstrap/hooks/maybe-merged-usr"

static const char build_usage[] =
	"usage: bulkhead image build NAME [--suite SUITE] [--packages P1,P2,...] [--mirror FILE]\n"
	"\n"
	"Makes a Debian root with mmdebstrap (--mode=root --variant=minbase; needs root) from\n"
	"this host's apt sources (/etc/apt/sources.list and sources.list.d/*.list, *.sources), or\n"
	"from --mirror FILE (a sources file, one-line or deb822, that names SUITE).\n"
	"\n"
	"  --suite SUITE       the Debian release (default bookworm)\n"
	"  --packages LIST     packages besides minbase (comma-separated Debian names)\n"
	"  --mirror FILE       apt sources to use instead of the host's\n"
	"\n"
	"Images stay small: dpkg leaves out /usr/share/doc (but copyright files), man and info\n"
	"pages and locales (path-exclude options, kept in the image's /etc/dpkg/dpkg.cfg.d for\n"
	"later installs). The same recipe over the same mirror content gives the same digest\n"
	"(SOURCE_DATE_EPOCH, default " BUILD_EPOCH "). Device nodes are removed.\n";

static const char *const excludes[] = {
	"--dpkgopt=path-exclude=/usr/share/doc/*",
	"--dpkgopt=path-include=/usr/share/doc/*/copyright",
	"--dpkgopt=path-exclude=/usr/share/man/*",
	"--dpkgopt=path-exclude=/usr/share/info/*",
	"--dpkgopt=path-exclude=/usr/share/locale/*",
	"--dpkgopt=path-include=/usr/share/locale/locale.alias",
	"--dpkgopt=path-exclude=/usr/share/lintian/*",
	/* dpkg's fsyncs are most of the time of a build; the image is synced once, whole. */
	"--dpkgopt=force-unsafe-io",
};

#define NEXCL (sizeof(excludes) / sizeof(excludes[0]))

/* /etc/hostname and /etc/resolv.conf of every image, the same on every host (mmdebstrap would
 * copy the host's): a session has no network of its own, and sets its host name. */
static int etc_files(struct image_work *w, char *hook, size_t len, char *err, size_t errlen)
{
	static const char *const files[][2] = { { "etc/hostname", "bulkhead\n" },
						{ "etc/resolv.conf", "" } };

	if (strpbrk(w->dir, " \t\n"))
		return errbuf_fail(err, errlen, -1,
				   "the store's path %s has white space, which mmdebstrap's hooks "
				   "split on; set BULKHEAD_CACHE",
				   w->dir);
	if (mkdirat(w->fd, "etc", 0755) < 0 || mkdirat(w->fd, "mm", 0755) < 0)
		return errbuf_fail(err, errlen, -1, "%s: %s", w->dir, strerror(errno));
	for (int i = 0; i < 2; i++) {
		int fd = openat(w->fd, files[i][0], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		size_t n = strlen(files[i][1]);
		if (fd < 0 || write(fd, files[i][1], n) != (ssize_t)n || close(fd) < 0)
			return errbuf_fail(err, errlen, -1, "%s/%s: %s", w->dir, files[i][0],
					   strerror(errno));
	}
	snprintf(hook, len, "--customize-hook=copy-in %s/etc/hostname %s/etc/resolv.conf /etc",
		 w->dir, w->dir);
	return 0;
}

static int run_mmdebstrap(struct image_work *w, const struct build_opts *o, const char *tar,
			  char *err, size_t errlen)
{
	const char *argv[16 + NEXCL + BUILD_SOURCES_MAX] = { "mmdebstrap", "--mode=root",
							     "--variant=minbase", "--format=tar" };
	char include[BUILD_PKGS_MAX * (BUILD_PKG_LEN + 1) + 16], hook[2 * PATH_MAX + 64];
	char tmpdir[PATH_MAX + 16], epoch[64];
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	size_t n = 4;
	struct stat st;

	if (etc_files(w, hook, sizeof(hook), err, errlen) < 0)
		return -1;
	if (stat(MERGED_USR_HOOKS, &st) == 0) /* else usrmerge would pull in perl */
		argv[n++] = "--hook-dir=" MERGED_USR_HOOKS;
	for (size_t i = 0; i < NEXCL; i++)
		argv[n++] = excludes[i];
	if (o->npkgs) {
		size_t k = (size_t)snprintf(include, sizeof(include), "--include=");
		for (size_t i = 0; i < o->npkgs; i++)
			k += (size_t)snprintf(include + k, sizeof(include) - k, "%s%s",
					      i ? "," : "", o->pkgs[i]);
		argv[n++] = include;
	}
	argv[n++] = hook;
	argv[n++] = o->suite;
	argv[n++] = tar;
	for (size_t i = 0; i < o->nsources; i++)
		argv[n++] = o->sources[i];
	argv[n] = NULL;
	snprintf(tmpdir, sizeof(tmpdir), "TMPDIR=%s/mm", w->dir);
	snprintf(epoch, sizeof(epoch), "SOURCE_DATE_EPOCH=%s",
		 sde && *sde && strspn(sde, "0123456789") == strlen(sde) ? sde : BUILD_EPOCH);
	const char *env[] = { tmpdir, epoch, NULL };
	struct image_tool t = { .argv = argv, .env = env, .out_fd = -1 };
	return image_tool_run(&t, err, errlen);
}

/* mmdebstrap's tar into img/rootfs: owners by number, modes, extended attributes. */
static int unpack_tar(struct image_work *w, const char *tar, char *err, size_t errlen)
{
	char rootfs[PATH_MAX + 16];
	const char *argv[] = { "tar",	   "--numeric-owner",
			       "--xattrs", "--xattrs-include=*",
			       "-xpf",	   tar,
			       "-C",	   rootfs,
			       NULL };
	struct image_tool t = { .argv = argv, .out_fd = -1 };

	snprintf(rootfs, sizeof(rootfs), "%s/img/rootfs", w->dir);
	if (mkdirat(w->fd, "img", 0755) < 0 || mkdirat(w->fd, "img/rootfs", 0755) < 0)
		return errbuf_fail(err, errlen, -1, "%s: %s", rootfs, strerror(errno));
	if (image_tool_run(&t, err, errlen) < 0)
		return -1;
	unlinkat(w->fd, "out.tar", 0); /* no longer needed: give its space back at once */
	return 0;
}

static json_t *recipe_json(const struct build_opts *o)
{
	json_t *p = json_array();
	for (size_t i = 0; p && i < o->npkgs; i++)
		json_array_append_new(p, json_string(o->pkgs[i]));
	return json_pack("{s:s, s:o}", "suite", o->suite, "packages", p);
}

/* The default config of a built image: root, in /, a shell. */
static int build_config(struct image_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->cwd, sizeof(cfg->cwd), "/");
	cfg->cmd[0] = strdup("/bin/sh");
	cfg->ncmd = 1;
	if (!cfg->cmd[0] || image_config_setenv(cfg, IMAGE_PATH_DEFAULT) < 0 ||
	    image_config_setenv(cfg, "HOME=/root") < 0)
		return -1;
	return 0;
}

static int build(struct image_store *s, const char *name, const struct build_opts *o, char *err,
		 size_t errlen)
{
	struct image_work w;
	struct image_meta m = { 0 };
	struct image_config cfg = { 0 };
	char tar[PATH_MAX + 16], rootfs[PATH_MAX + 16], hex[IMAGE_HEX_LEN + 1];
	uint64_t t0;
	bool existed = false;
	json_t *recipe = recipe_json(o);
	int rc = -1, img = -1;

	t0 = mono_ns();
	image_work_sweep(s);
	if (image_work_begin(s, "build", &w, err, errlen) < 0) {
		json_decref(recipe);
		return -1;
	}
	snprintf(tar, sizeof(tar), "%s/out.tar", w.dir);
	snprintf(rootfs, sizeof(rootfs), "%s/img/rootfs", w.dir);
	if (build_check_packages(&w, o, err, errlen) < 0 ||
	    run_mmdebstrap(&w, o, tar, err, errlen) < 0 ||
	    image_sha256_file(tar, hex, err, errlen) < 0 || unpack_tar(&w, tar, err, errlen) < 0 ||
	    image_rootfs_scrub(rootfs, &m.size, err, errlen) < 0)
		goto out;
	if (build_config(&cfg) < 0 || !recipe) {
		errbuf_set(err, errlen, "out of memory");
		goto out;
	}
	snprintf(m.digest, sizeof(m.digest), "sha256:%s", hex);
	snprintf(m.name, sizeof(m.name), "%s", name);
	snprintf(m.source, sizeof(m.source), "mmdebstrap:%s", o->suite);
	image_now(m.created);
	img = openat(w.fd, "img", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (img < 0 || image_json_write(img, &m, &cfg, recipe, err, errlen) < 0 ||
	    image_work_commit(s, &w, hex, name, &existed, err, errlen) < 0)
		goto out;
	image_say_done("built", name, &m, t0, existed);
	rc = 0;
out:
	if (rc < 0)
		image_work_failed(s, &w, err, errlen);
	if (img >= 0)
		close(img);
	image_config_free(&cfg);
	json_decref(recipe);
	image_work_end(&w);
	return rc;
}

static int parse(int argc, char **argv, struct build_opts *o, const char **name,
		 const char **mirror, char *err, size_t errlen)
{
	static const struct option longopts[] = { { "suite", required_argument, NULL, 's' },
						  { "packages", required_argument, NULL, 'p' },
						  { "mirror", required_argument, NULL, 'm' },
						  { "help", no_argument, NULL, 'h' },
						  { NULL, 0, NULL, 0 } };
	const char *suite = "bookworm";
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 's')
			suite = optarg;
		else if (c == 'p' && build_packages(o, optarg, err, errlen) < 0)
			return -1;
		else if (c == 'm')
			*mirror = optarg;
		else if (c == 'h')
			return 1;
		else if (c == '?')
			return errbuf_fail(err, errlen, -1,
					   "unknown or incomplete option '%s' (see "
					   "'bulkhead image build --help')",
					   argv[optind - 1]);
	}
	if (optind != argc - 1)
		return errbuf_fail(err, errlen, -1,
				   "give one NAME (see 'bulkhead image build --help')");
	*name = argv[optind];
	if (image_name_check(*name, err, errlen) < 0 || build_suite(o, suite, err, errlen) < 0)
		return -1;
	return 0;
}

int image_build_cmd(int argc, char **argv)
{
	struct build_opts o = { 0 };
	struct image_store s = { .fd = -1 };
	const char *mirror = NULL, *name = NULL;
	char err[1024] = "";
	int rc = parse(argc, argv, &o, &name, &mirror, err, sizeof(err));

	if (rc == 1) {
		fputs(build_usage, stdout);
		build_opts_free(&o);
		return 0;
	}
	if (rc == 0 && geteuid() != 0)
		rc = errbuf_fail(err, sizeof(err), -1,
				 "building an image needs root (mmdebstrap --mode=root); run it as "
				 "root, or import an image instead");
	if (rc == 0)
		rc = build_sources(&o, mirror, err, sizeof(err));
	if (rc == 0)
		rc = image_store_open(&s, 1, err, sizeof(err));
	if (rc == 0) {
		image_disk_budget(s.dir, IMAGE_DISK_MAX);
		rc = build(&s, name, &o, err, sizeof(err));
	}
	if (rc < 0)
		fprintf(stderr, "bulkhead image build: %s\n", err);
	image_store_close(&s);
	build_opts_free(&o);
	return rc < 0 ? (image_signal() ? 128 + image_signal() : 125) : 0;
}
