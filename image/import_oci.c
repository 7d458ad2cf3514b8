/* SPDX-License-Identifier: Apache-2.0 */
/* image/import_oci.c: what an imported image says — its manifest's digest and what its config
 * sets, from the OCI layout skopeo wrote, and the process umoci's bundle config.json describes
 * (user names resolved by umoci in the image's own /etc/passwd and /etc/group). */
#include "image/image_internal.h"
#include "lib/errbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>

/* umoci fills in runtime defaults the image never said: these are taken out again. */
#define UMOCI_TERM "TERM=xterm"

static json_t *load(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[PATH_MAX];
	json_error_t je;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
		errbuf_set(err, errlen, "path too long: %s/%s", dir, name);
		return NULL;
	}
	/* Written by skopeo or umoci; any size limit is a sanity check, not a defence. */
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		errbuf_set(err, errlen, "%s: line %d: %s", path, je.line, je.text);
	else if (!json_is_object(o)) {
		errbuf_set(err, errlen, "%s is not a JSON object", path);
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* A descriptor's blob as JSON, its digest checked for form (the bytes were checked by skopeo). */
static json_t *load_blob(const char *layout, json_t *desc, char *digest, size_t dlen, char *err,
			 size_t errlen)
{
	const char *d = json_string_value(json_object_get(desc, "digest"));
	char rel[7 + 8 + IMAGE_HEX_LEN + 1];

	if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + IMAGE_HEX_LEN ||
	    strspn(d + 7, "0123456789abcdef") != IMAGE_HEX_LEN) {
		errbuf_set(err, errlen, "the layout names a blob without a sha256 digest");
		return NULL;
	}
	if (digest)
		snprintf(digest, dlen, "%s", d);
	snprintf(rel, sizeof(rel), "blobs/sha256/%s", d + 7);
	return load(layout, rel, err, errlen);
}

int image_oci_read(const char *layout, const char *ref, struct image_oci *o, char *err,
		   size_t errlen)
{
	json_t *index = load(layout, "index.json", err, errlen), *man = NULL, *conf = NULL, *v;
	json_t *desc = NULL;
	size_t i;
	int rc = -1;

	memset(o, 0, sizeof(*o));
	if (!index)
		return -1;
	json_array_foreach(json_object_get(index, "manifests"), i, v)
	{
		const char *r = json_string_value(json_object_get(
			json_object_get(v, "annotations"), "org.opencontainers.image.ref.name"));
		if (r && strcmp(r, ref) == 0)
			desc = v;
	}
	if (!desc) {
		errbuf_set(err, errlen, "%s/index.json names no image '%s'", layout, ref);
		goto out;
	}
	if (!(man = load_blob(layout, desc, o->digest, sizeof(o->digest), err, errlen)) ||
	    !(conf = load_blob(layout, json_object_get(man, "config"), NULL, 0, err, errlen)))
		goto out;
	json_t *c = json_object_get(conf, "config");
	const char *user = json_string_value(json_object_get(c, "User"));
	o->user_named = user && user[strspn(user, "0123456789:")];
	o->has_cmd = json_array_size(json_object_get(c, "Entrypoint")) > 0 ||
		     json_array_size(json_object_get(c, "Cmd")) > 0;
	json_array_foreach(json_object_get(c, "Env"), i, v)
	{
		const char *e = json_string_value(v);
		if (e && strncmp(e, "TERM=", 5) == 0)
			o->has_term = true;
		if (e && strncmp(e, "HOME=", 5) == 0)
			o->has_home = true;
	}
	rc = 0;
out:
	json_decref(conf);
	json_decref(man);
	json_decref(index);
	return rc;
}

static int ids(json_t *user, struct image_config *cfg, char *err, size_t errlen)
{
	json_t *uid = json_object_get(user, "uid"), *gid = json_object_get(user, "gid"), *v;
	json_t *extra = json_object_get(user, "additionalGids");
	size_t i;

	if (!json_is_integer(uid) || !json_is_integer(gid) || json_integer_value(uid) < 0 ||
	    json_integer_value(gid) < 0 || json_integer_value(uid) > (json_int_t)IMAGE_UID_MAX ||
	    json_integer_value(gid) > (json_int_t)IMAGE_UID_MAX)
		return errbuf_fail(err, errlen, -1, "the image's user or group id is out of range");
	cfg->uid = (uid_t)json_integer_value(uid);
	cfg->gid = (gid_t)json_integer_value(gid);
	if (json_array_size(extra) > IMAGE_GIDS_MAX)
		return errbuf_fail(err, errlen, -1,
				   "the image's user is in %zu groups (at most %d)",
				   json_array_size(extra), IMAGE_GIDS_MAX);
	json_array_foreach(extra, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > (json_int_t)IMAGE_UID_MAX)
			return errbuf_fail(err, errlen, -1, "the image's group %zu is out of range",
					   i);
		cfg->gids[cfg->ngids++] = (gid_t)json_integer_value(v);
	}
	return 0;
}

/* Whether ROOTFS/NAME is a regular file reached without a symbolic link or "..", or absent:
 * umoci resolved a named user through the image's passwd and group files, following links out
 * of the image as the host would, so a named user counts only when these are the image's own. */
static bool in_root_file(const char *rootfs, const char *name)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
				.resolve =
					RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV };
	int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return false;
	int fd = (int)syscall(SYS_openat2, root, name, &how, sizeof(how));
	int e = errno;
	struct stat st;
	bool ok = fd >= 0 ? fstat(fd, &st) == 0 && S_ISREG(st.st_mode) : e == ENOENT;
	if (fd >= 0)
		close(fd);
	close(root);
	return ok;
}

/* env and args: counted, each string bounded. */
static int strings(json_t *a, size_t max, const char *what, int env, struct image_config *cfg,
		   const struct image_oci *o, char *err, size_t errlen)
{
	size_t i, bytes = 0;
	json_t *v;

	if (a && !json_is_array(a))
		return errbuf_fail(err, errlen, -1, "the image's %s is not a list", what);
	if (json_array_size(a) > max)
		return errbuf_fail(err, errlen, -1, "the image has %zu %s entries (at most %zu)",
				   json_array_size(a), what, max);
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(v);
		if (!s || strlen(s) >= IMAGE_STR_MAX)
			return errbuf_fail(err, errlen, -1,
					   "the image's %s[%zu] is not a string under %d bytes",
					   what, i, IMAGE_STR_MAX);
		if (env) {
			if (!strchr(s, '=') || s[0] == '=')
				return errbuf_fail(err, errlen, -1,
						   "the image's env[%zu] is not KEY=VALUE", i);
			/* What no session could run with is refused now, not at every run. */
			if (strchr(s, '\n'))
				return errbuf_fail(err, errlen, -1,
						   "the image's env[%zu] holds a newline", i);
			if ((bytes += strlen(s) + 1) > IMAGE_ENV_BYTES)
				return errbuf_fail(err, errlen, -1,
						   "the image's environment is over %d bytes",
						   IMAGE_ENV_BYTES);
			if ((!o->has_term && strcmp(s, UMOCI_TERM) == 0))
				continue;
			/* umoci adds a HOME from the image's passwd, read as the host would
			 * (through links out of the image): ours comes from image_rootfs_home
			 * instead. */
			if (!o->has_home && strncmp(s, "HOME=", 5) == 0)
				continue;
			if (image_config_setenv(cfg, s) < 0)
				return errbuf_fail(err, errlen, -1, "out of memory");
		} else if (!(cfg->cmd[cfg->ncmd++] = strdup(s))) {
			return errbuf_fail(err, errlen, -1, "out of memory");
		}
	}
	return 0;
}

int image_oci_bundle_config(const char *bundle, const struct image_oci *o, struct image_config *cfg,
			    char *err, size_t errlen)
{
	json_t *spec = load(bundle, "config.json", err, errlen);
	json_t *proc = json_object_get(spec, "process");
	char rootfs[PATH_MAX], home[PATH_MAX + 5];
	int rc = -1;

	memset(cfg, 0, sizeof(*cfg));
	if (!spec)
		return -1;
	const char *cwd = json_string_value(json_object_get(proc, "cwd"));
	if (!json_is_object(proc) || !cwd || cwd[0] != '/' || strlen(cwd) >= sizeof(cfg->cwd)) {
		errbuf_set(err, errlen, "the image's working directory is not an absolute path");
		goto out;
	}
	snprintf(cfg->cwd, sizeof(cfg->cwd), "%s", cwd);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
	if (o->user_named &&
	    (!in_root_file(rootfs, "etc/passwd") || !in_root_file(rootfs, "etc/group"))) {
		errbuf_set(err, errlen,
			   "the image names its user, but its /etc/passwd or /etc/group is not a "
			   "file of its own (a symbolic link on the way): refused, as the names "
			   "could be read from outside the image");
		goto out;
	}
	if (ids(json_object_get(proc, "user"), cfg, err, errlen) < 0 ||
	    strings(json_object_get(proc, "env"), IMAGE_ENV_MAX, "env", 1, cfg, o, err, errlen) <
		    0 ||
	    (o->has_cmd && strings(json_object_get(proc, "args"), IMAGE_CMD_MAX, "command", 0, cfg,
				   o, err, errlen) < 0))
		goto out;
	if (!image_config_getenv(cfg, "PATH") && image_config_setenv(cfg, IMAGE_PATH_DEFAULT) < 0)
		goto full;
	if (!image_config_getenv(cfg, "HOME")) {
		memcpy(home, "HOME=", 5);
		image_rootfs_home(rootfs, cfg->uid, home + 5, sizeof(home) - 5);
		if (image_config_setenv(cfg, home) < 0)
			goto full;
	}
	rc = 0;
	goto out;
full:
	errbuf_set(err, errlen, "the image has more than %d env entries", IMAGE_ENV_MAX);
out:
	if (rc < 0)
		image_config_free(cfg);
	json_decref(spec);
	return rc;
}
