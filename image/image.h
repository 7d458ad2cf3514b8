/* SPDX-License-Identifier: Apache-2.0 */
/* image/image.h: the image store — Debian roots built with mmdebstrap and OCI or Docker
 * archives imported with skopeo and umoci, kept content-addressed in
 * ${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-~/.cache}/bulkhead}/images:
 *
 *   sha256/<hex>/rootfs/      the root file system, as unpacked (no device nodes)
 *   sha256/<hex>/image.json   what a session needs: {"digest", "name", "source", "created",
 *                             "size", "config": {"env": [...], "cwd", "uid", "gid", "gids": [],
 *                             "cmd": [...]}}, env with PATH and HOME resolved
 *   names/<NAME>              symbolic link to ../sha256/<hex>
 *   tmp/                      work in progress; an image appears only by rename when complete
 *
 * A session serves rootfs read-only (session/share_image.c); nothing here runs a guest. */
#ifndef BULKHEAD_IMAGE_IMAGE_H
#define BULKHEAD_IMAGE_IMAGE_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define IMAGE_NAME_MAX 64  /* [A-Za-z0-9][A-Za-z0-9._-]*, at most this long */
#define IMAGE_ENV_MAX  1024 /* entries of config.env (Kubernetes' service variables run to hundreds) */
/* config.env's entries with their terminators, at most: half of an exec request
 * (AGENT_MAX_PAYLOAD), the rest being the command's and -e's. No entry holds a newline. */
#define IMAGE_ENV_BYTES 32768
#define IMAGE_CMD_MAX	1024 /* entries of config.cmd */
#define IMAGE_GIDS_MAX	32   /* supplementary groups */
#define IMAGE_STR_MAX	4096 /* any one string of the config */

struct image_config {
	char *env[IMAGE_ENV_MAX + 1]; /* "KEY=VALUE", NULL-terminated; PATH and HOME present */
	size_t nenv;
	char *cmd[IMAGE_CMD_MAX + 1]; /* the default command, NULL-terminated (may be empty) */
	size_t ncmd;
	char cwd[PATH_MAX]; /* absolute; "/" when the image says nothing */
	uid_t uid;
	gid_t gid;
	gid_t gids[IMAGE_GIDS_MAX];
	size_t ngids;
};

struct image {
	char name[IMAGE_NAME_MAX + 1];
	char digest[7 + 64 + 1]; /* "sha256:<hex>" */
	char dir[PATH_MAX];	 /* .../images/sha256/<hex> */
	char rootfs[PATH_MAX];	 /* .../images/sha256/<hex>/rootfs */
	struct image_config cfg;
};

/* The store's directory (created 0700 when missing when CREATE). 0 or -1 with err. */
int image_store_dir(char *buf, size_t len, int create, char *err, size_t errlen);

/* Finds image NAME and reads its image.json, checking every field. 0, or -1 with one line in
 * err ("image 'py' not found: build it with 'bulkhead image build py ...' or import it", "image
 * 'py' is damaged: ..."). Release with image_close. */
int image_open(const char *name, struct image *img, char *err, size_t errlen);
void image_close(struct image *img);

/* `bulkhead image build|import|ls|rm ...` (cli/main.c's table). */
int image_cmd(int argc, char **argv);

#endif
