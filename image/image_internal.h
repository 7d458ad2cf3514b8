/* SPDX-License-Identifier: Apache-2.0 */
/* image/image_internal.h: the image store's internal header — the store and its work directories
 * (store.c, work.c), image.json (config.c), what is done to a fresh root (rootfs.c), the external
 * tools (spawn.c), and the two ways in (build.c, import.c with import_oci.c). */
#ifndef BULKHEAD_IMAGE_IMAGE_INTERNAL_H
#define BULKHEAD_IMAGE_IMAGE_INTERNAL_H

#include "image/image.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define IMAGE_HEX_LEN	   64
#define IMAGE_JSON_MAX	   (1u << 20) /* image.json, and any JSON file we read from a layout */
#define IMAGE_CREATED_SZ   21	      /* "YYYY-MM-DDTHH:MM:SSZ" */
#define IMAGE_PATH_DEFAULT "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define IMAGE_UID_MAX	   4294967294u /* (uid_t)-1 means "no change" to the kernel */

/* What image.json says besides the config. */
struct image_meta {
	char digest[7 + IMAGE_HEX_LEN + 1];
	char name[IMAGE_NAME_MAX + 1];
	char source[IMAGE_STR_MAX + 1];
	char created[IMAGE_CREATED_SZ];
	uint64_t size; /* bytes the root takes on disk, hard links once */
};

/* --- store.c: the store's directories, names, and the one step that publishes an image --- */
struct image_store {
	char dir[PATH_MAX - 256]; /* .../images (short enough for what goes below it) */
	int fd;			  /* that directory */
};

/* config.c: 0 when NAME is [A-Za-z0-9][A-Za-z0-9._-]* of at most IMAGE_NAME_MAX, else -1 with why.
 */
int image_name_check(const char *name, char *err, size_t errlen);
/* Opens (CREATE: makes) the store with its sha256/, names/ and tmp/. 0, or a negative errno
 * (-ENOENT: there is no store yet) with err. */
int image_store_open(struct image_store *s, int create, char *err, size_t errlen);
void image_store_close(struct image_store *s);
/* The store's lock, held while names and digests change (commit, rm). A descriptor, or -1. */
int image_store_lock(struct image_store *s, char *err, size_t errlen);
/* The digest names/NAME points at: 0 with HEX, -ENOENT when there is no such name, -EINVAL
 * when the link is not "../sha256/<hex>", or another negative errno. */
int image_name_target(struct image_store *s, const char *name, char hex[IMAGE_HEX_LEN + 1]);
/* Reads and checks sha256/HEX/image.json and the root beside it (image_open without the name). */
int image_load(struct image_store *s, const char *hex, struct image_meta *meta,
	       struct image_config *cfg, char *why, size_t whylen);

/* --- work.c: tmp/ entries, each owned by the process holding its .lock --- */
struct image_work {
	char dir[PATH_MAX]; /* .../images/tmp/<kind>-XXXXXX */
	int fd;
	int lockfd;
};

/* Removes stale entries of tmp/: those whose .lock nobody holds (their process is gone, however
 * it ended), and those without a .lock that are older than an hour (killed while being made). */
void image_work_sweep(struct image_store *s);
/* A new, locked entry of tmp/. 0, or -1 with err. */
int image_work_begin(struct image_store *s, const char *kind, struct image_work *w, char *err,
		     size_t errlen);
/* Removes the entry and everything in it (mounts are never crossed: lib/tree_remove.h). */
void image_work_end(struct image_work *w);
/* Publishes W's "img" (rootfs/ and image.json) as sha256/HEX, unless a sound copy is there
 * already (then *EXISTED is set and W's copy is dropped with W), and points names/NAME at it,
 * atomically. Takes the store lock. 0, or -1 with err. */
int image_work_commit(struct image_store *s, struct image_work *w, const char *hex,
		      const char *name, bool *existed, char *err, size_t errlen);

/* --- config.c: image.json --- */
int image_json_parse(const char *text, size_t len, struct image_meta *meta,
		     struct image_config *cfg, char *why, size_t whylen);
/* Writes DIRFD/image.json (fsync'd). RECIPE may be NULL. 0, or -1 with err. */
int image_json_write(int dirfd, const struct image_meta *meta, const struct image_config *cfg,
		     json_t *recipe, char *err, size_t errlen);
/* Adds "KEY=VALUE" (copied); replaces an entry with the same KEY. 0, or -1 when full. */
int image_config_setenv(struct image_config *cfg, const char *kv);
/* The entry for KEY ("KEY=..."), or NULL. */
const char *image_config_getenv(const struct image_config *cfg, const char *key);
void image_config_free(struct image_config *cfg);
/* "YYYY-MM-DDTHH:MM:SSZ" for now, into BUF (IMAGE_CREATED_SZ). */
void image_now(char buf[IMAGE_CREATED_SZ]);

/* --- rootfs.c: a fresh root before it is published --- */
/* Removes every block and character device node under ROOTFS and sums what it takes on disk.
 * 0, or -1 with err (the walk could not finish: the image is not published). */
int image_rootfs_scrub(const char *rootfs, uint64_t *size, char *err, size_t errlen);
/* What PATH takes on disk (hard links once); 0 when it cannot be walked. */
uint64_t image_du(const char *path);
/* UID's home directory from ROOTFS/etc/passwd, resolved inside ROOTFS whatever its links say;
 * "/" when there is none. */
void image_rootfs_home(const char *rootfs, uid_t uid, char *home, size_t len);
/* The SHA-256 of file PATH as 64 hex digits. 0, or -1 with err. */
int image_sha256_file(const char *path, char hex[IMAGE_HEX_LEN + 1], char *err, size_t errlen);

/* --- spawn.c: external tools, by fork and exec, never a shell --- */
struct image_tool {
	const char *const *argv; /* argv[0] is looked up in PATH */
	const char *const *env;	 /* "KEY=VALUE" set for the tool only, or NULL */
	int out_fd;		 /* its stdout; -1: our stderr (progress stays off our stdout) */
};
/* Runs the tool with stdin on /dev/null and stderr passed through. 0 when it exits 0, else -1
 * with err ("skopeo failed (exit status 1)", "... interrupted"). */
int image_tool_run(const struct image_tool *t, char *err, size_t errlen);
/* The same, calling LINE for each line of its stdout (newline removed). */
int image_tool_lines(const struct image_tool *t, void (*line)(const char *s, void *arg), void *arg,
		     char *err, size_t errlen);
/* SIGINT, SIGTERM and SIGHUP are noted (and passed to a running tool) rather than killing us,
 * so that a command can clean up. image_signal() is the one received, or 0. */
void image_signals_catch(void);
int image_signal(void);
/* From now on, the tools of this command may fill at most MAX bytes of DIR's file system
 * ($BULKHEAD_IMAGE_MAX_MIB overrides) and must leave it 512 MiB: past that the tool is killed
 * and its run fails saying so; no one file grows past MAX. */
#define IMAGE_DISK_MAX (16ull << 30)
void image_disk_budget(const char *dir, uint64_t max);

/* --- the commands --- */
int image_build_cmd(int argc, char **argv);
/* build_opts.c: what a build is asked for, checked */
#define BUILD_PKGS_MAX	  256
#define BUILD_PKG_LEN	  100
#define BUILD_SOURCES_MAX 32
struct build_opts {
	char suite[33];
	char *pkgs[BUILD_PKGS_MAX]; /* sorted, each once */
	size_t npkgs;
	char *sources[BUILD_SOURCES_MAX]; /* files handed to mmdebstrap as its mirrors */
	size_t nsources;
};
int build_suite(struct build_opts *o, const char *suite, char *err, size_t errlen);
/* Comma- or space-separated Debian package names. */
int build_packages(struct build_opts *o, const char *list, char *err, size_t errlen);
/* MIRROR, or the host's apt sources when NULL; one of them must name the suite. */
int build_sources(struct build_opts *o, const char *mirror, char *err, size_t errlen);
void build_opts_free(struct build_opts *o);
/* build_check.c: apt resolves the packages against the build's sources, in W. 0, or -1. */
int build_check_packages(struct image_work *w, const struct build_opts *o, char *err,
			 size_t errlen);
int image_import_cmd(int argc, char **argv);
/* import_oci.c: what an OCI layout made by skopeo says */
struct image_oci {
	char digest[7 + IMAGE_HEX_LEN + 1]; /* the manifest's */
	bool has_cmd;			    /* Entrypoint or Cmd present */
	bool has_term;			    /* Env names TERM */
	bool has_home;			    /* Env names HOME */
	bool user_named;		    /* User names a user or group (not ids alone) */
};
int image_oci_read(const char *layout, const char *ref, struct image_oci *o, char *err,
		   size_t errlen);
/* umoci's bundle config.json (OCI runtime spec) into CFG, PATH and HOME completed. */
int image_oci_bundle_config(const char *bundle, const struct image_oci *o, struct image_config *cfg,
			    char *err, size_t errlen);
/* The store's space, said after a failure that may be a full disk: " (the store's file system
 * has N MiB free)" when it has less than a MiB or less than USED (what the failed work took:
 * whatever failed could not have made a second copy of it), else "". */
const char *image_store_space(const struct image_store *s, uint64_t used);
/* The one-line summary of a build or import that VERB ("built") NAME: size, time since T0
 * (CLOCK_MONOTONIC), digest, and whether the store had it already. */
void image_say_done(const char *verb, const char *name, const struct image_meta *m,
		    uint64_t t0_ns, bool existed);
/* Appends that to ERR for a failure of W, before W is removed. */
void image_work_failed(const struct image_store *s, const struct image_work *w, char *err,
		       size_t errlen);

#endif
