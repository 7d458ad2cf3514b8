/* SPDX-License-Identifier: Apache-2.0 */
/* image/config.c: image.json, written once when an image is made and checked field by field
 * whenever it is read: a session trusts nothing in it that this file did not check. */
#include "image/image_internal.h"
#include "lib/errbuf.h"
#include "lib/io.h"
#include "lib/json_strict.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int image_name_check(const char *name, char *err, size_t errlen)
{
	size_t n = strlen(name);

	if (n == 0)
		return errbuf_fail(err, errlen, -1, "an image name may not be empty");
	if (n > IMAGE_NAME_MAX)
		return errbuf_fail(err, errlen, -1, "image name '%.16s...' is longer than %d", name,
				   IMAGE_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return errbuf_fail(err, errlen, -1,
					   "bad image name '%s': use A-Z a-z 0-9 . _ - (not first)",
					   name);
	}
	return 0;
}

static const char *const top_keys[] = { "digest", "name",   "source", "created",
					"size",	  "config", "recipe", NULL };
static const char *const cfg_keys[] = { "env", "cwd", "uid", "gid", "gids", "cmd", NULL };
static const char *const recipe_keys[] = { "suite", "packages", NULL };

void image_now(char buf[IMAGE_CREATED_SZ])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, IMAGE_CREATED_SZ, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static size_t key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');
	return eq ? (size_t)(eq - kv) : strlen(kv);
}

const char *image_config_getenv(const struct image_config *cfg, const char *key)
{
	size_t n = strlen(key);

	for (size_t i = 0; i < cfg->nenv; i++)
		if (key_len(cfg->env[i]) == n && strncmp(cfg->env[i], key, n) == 0)
			return cfg->env[i];
	return NULL;
}

int image_config_setenv(struct image_config *cfg, const char *kv)
{
	size_t n = key_len(kv);
	char *copy = strdup(kv);

	if (!copy)
		return -1;
	for (size_t i = 0; i < cfg->nenv; i++)
		if (key_len(cfg->env[i]) == n && strncmp(cfg->env[i], kv, n) == 0) {
			free(cfg->env[i]);
			cfg->env[i] = copy;
			return 0;
		}
	if (cfg->nenv >= IMAGE_ENV_MAX) {
		free(copy);
		return -1;
	}
	cfg->env[cfg->nenv++] = copy;
	cfg->env[cfg->nenv] = NULL;
	return 0;
}

void image_config_free(struct image_config *cfg)
{
	for (size_t i = 0; i < cfg->nenv; i++)
		free(cfg->env[i]);
	for (size_t i = 0; i < cfg->ncmd; i++)
		free(cfg->cmd[i]);
	memset(cfg, 0, sizeof(*cfg));
}

/* A string of 1..MAX bytes without NUL (jansson keeps \u0000 out unless asked; checked anyway). */
static const char *str_ok(json_t *v, size_t max, int may_be_empty)
{
	const char *s = json_string_value(v);
	if (!s || strlen(s) != json_string_length(v) || strlen(s) > max || (!may_be_empty && !*s))
		return NULL;
	return s;
}

static int id_ok(json_t *v, unsigned *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)IMAGE_UID_MAX)
		return 0;
	*out = (unsigned)json_integer_value(v);
	return 1;
}

/* An array of at most MAX strings into OUT (copies), *N set. */
static int str_array(json_t *a, size_t max, char **out, size_t *n, const char *what, char *why,
		     size_t whylen)
{
	size_t i;
	json_t *v;

	if (!json_is_array(a))
		return errbuf_fail(why, whylen, -1, "config.%s is not an array", what);
	if (json_array_size(a) > max)
		return errbuf_fail(why, whylen, -1, "config.%s has %zu entries (at most %zu)", what,
				   json_array_size(a), max);
	json_array_foreach(a, i, v)
	{
		const char *s = str_ok(v, IMAGE_STR_MAX - 1, 1);
		if (!s)
			return errbuf_fail(why, whylen, -1,
					   "config.%s[%zu] is not a string of at most %d bytes",
					   what, i, IMAGE_STR_MAX - 1);
		if (!(out[i] = strdup(s)))
			return errbuf_fail(why, whylen, -1, "out of memory");
		*n = i + 1;
	}
	out[*n] = NULL;
	return 0;
}

static int env_check(const struct image_config *cfg, char *why, size_t whylen)
{
	size_t bytes = 0;
	for (size_t i = 0; i < cfg->nenv; i++) {
		size_t k = key_len(cfg->env[i]);
		bytes += strlen(cfg->env[i]) + 1;
		if (strchr(cfg->env[i], '\n'))
			return errbuf_fail(why, whylen, -1, "config.env[%zu] holds a newline", i);
		if (bytes > IMAGE_ENV_BYTES)
			return errbuf_fail(why, whylen, -1, "config.env is over %d bytes",
					   IMAGE_ENV_BYTES);
		if (k == 0 || cfg->env[i][k] != '=')
			return errbuf_fail(why, whylen, -1, "config.env[%zu] is not KEY=VALUE", i);
		for (size_t j = 0; j < i; j++)
			if (key_len(cfg->env[j]) == k && strncmp(cfg->env[j], cfg->env[i], k) == 0)
				return errbuf_fail(why, whylen, -1, "config.env names %.*s twice",
						   (int)k, cfg->env[i]);
	}
	if (!image_config_getenv(cfg, "PATH") || !image_config_getenv(cfg, "HOME"))
		return errbuf_fail(why, whylen, -1, "config.env lacks PATH or HOME");
	return 0;
}

static int config_parse(json_t *c, struct image_config *cfg, char *why, size_t whylen)
{
	const char *bad, *cwd;
	json_t *gids = json_object_get(c, "gids"), *v;
	unsigned id;
	size_t i;

	if (!json_is_object(c))
		return errbuf_fail(why, whylen, -1, "config is not an object");
	if ((bad = json_strict_unknown(c, cfg_keys)))
		return errbuf_fail(why, whylen, -1, "config has an unknown key '%s'", bad);
	if (str_array(json_object_get(c, "env"), IMAGE_ENV_MAX, cfg->env, &cfg->nenv, "env", why,
		      whylen) < 0 ||
	    str_array(json_object_get(c, "cmd"), IMAGE_CMD_MAX, cfg->cmd, &cfg->ncmd, "cmd", why,
		      whylen) < 0 ||
	    env_check(cfg, why, whylen) < 0)
		return -1;
	cwd = str_ok(json_object_get(c, "cwd"), sizeof(cfg->cwd) - 1, 0);
	if (!cwd || cwd[0] != '/')
		return errbuf_fail(why, whylen, -1, "config.cwd is not an absolute path");
	snprintf(cfg->cwd, sizeof(cfg->cwd), "%s", cwd);
	if (!id_ok(json_object_get(c, "uid"), &id))
		return errbuf_fail(why, whylen, -1, "config.uid is not an integer 0..%u",
				   IMAGE_UID_MAX);
	cfg->uid = id;
	if (!id_ok(json_object_get(c, "gid"), &id))
		return errbuf_fail(why, whylen, -1, "config.gid is not an integer 0..%u",
				   IMAGE_UID_MAX);
	cfg->gid = id;
	if (!json_is_array(gids) || json_array_size(gids) > IMAGE_GIDS_MAX)
		return errbuf_fail(why, whylen, -1, "config.gids is not an array of at most %d",
				   IMAGE_GIDS_MAX);
	json_array_foreach(gids, i, v)
	{
		if (!id_ok(v, &id))
			return errbuf_fail(why, whylen, -1, "config.gids[%zu] is not a group id",
					   i);
		cfg->gids[i] = id;
	}
	cfg->ngids = json_array_size(gids);
	return 0;
}

static int recipe_check(json_t *r, char *why, size_t whylen)
{
	const char *bad;
	json_t *p = json_object_get(r, "packages"), *v;
	size_t i;

	if (!json_is_object(r) || !str_ok(json_object_get(r, "suite"), 64, 0) || !json_is_array(p))
		return errbuf_fail(why, whylen, -1, "recipe is not {\"suite\", \"packages\"}");
	if ((bad = json_strict_unknown(r, recipe_keys)))
		return errbuf_fail(why, whylen, -1, "recipe has an unknown key '%s'", bad);
	json_array_foreach(p, i, v)
	{
		if (!str_ok(v, 256, 0))
			return errbuf_fail(why, whylen, -1,
					   "recipe.packages[%zu] is not a package name", i);
	}
	return 0;
}

static int meta_parse(json_t *o, struct image_meta *m, char *why, size_t whylen)
{
	const char *digest = str_ok(json_object_get(o, "digest"), 7 + IMAGE_HEX_LEN, 0);
	const char *name = str_ok(json_object_get(o, "name"), IMAGE_NAME_MAX, 0);
	const char *source = str_ok(json_object_get(o, "source"), IMAGE_STR_MAX, 0);
	const char *created = str_ok(json_object_get(o, "created"), IMAGE_CREATED_SZ - 1, 0);
	json_t *size = json_object_get(o, "size");

	if (!digest || strlen(digest) != 7 + IMAGE_HEX_LEN || strncmp(digest, "sha256:", 7) != 0 ||
	    strspn(digest + 7, "0123456789abcdef") != IMAGE_HEX_LEN)
		return errbuf_fail(why, whylen, -1, "digest is not sha256:<64 hex digits>");
	if (!name || image_name_check(name, NULL, 0) < 0)
		return errbuf_fail(why, whylen, -1, "name is not an image name");
	if (!source)
		return errbuf_fail(why, whylen, -1, "source is not a string");
	if (!created || strlen(created) != IMAGE_CREATED_SZ - 1 || created[10] != 'T' ||
	    created[19] != 'Z')
		return errbuf_fail(why, whylen, -1, "created is not YYYY-MM-DDTHH:MM:SSZ");
	if (!json_is_integer(size) || json_integer_value(size) < 0)
		return errbuf_fail(why, whylen, -1, "size is not a byte count");
	snprintf(m->digest, sizeof(m->digest), "%s", digest);
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->source, sizeof(m->source), "%s", source);
	snprintf(m->created, sizeof(m->created), "%s", created);
	m->size = (uint64_t)json_integer_value(size);
	return 0;
}

int image_json_parse(const char *text, size_t len, struct image_meta *meta,
		     struct image_config *cfg, char *why, size_t whylen)
{
	json_error_t je;
	const char *bad;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *r;
	int rc = -1;

	memset(cfg, 0, sizeof(*cfg));
	memset(meta, 0, sizeof(*meta));
	if (!o)
		return errbuf_fail(why, whylen, -1, "image.json line %d: %s", je.line, je.text);
	if (!json_is_object(o))
		errbuf_set(why, whylen, "image.json is not an object");
	else if ((bad = json_strict_unknown(o, top_keys)))
		errbuf_set(why, whylen, "image.json has an unknown key '%s'", bad);
	else if (meta_parse(o, meta, why, whylen) == 0 &&
		 ((r = json_object_get(o, "recipe")) == NULL ||
		  recipe_check(r, why, whylen) == 0) &&
		 config_parse(json_object_get(o, "config"), cfg, why, whylen) == 0)
		rc = 0;
	if (rc < 0)
		image_config_free(cfg);
	json_decref(o);
	return rc;
}

static json_t *str_list(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

int image_json_write(int dirfd, const struct image_meta *m, const struct image_config *cfg,
		     json_t *recipe, char *err, size_t errlen)
{
	json_t *gids = json_array();
	for (size_t i = 0; gids && i < cfg->ngids; i++)
		json_array_append_new(gids, json_integer(cfg->gids[i]));
	json_t *c =
		json_pack("{s:o, s:s, s:I, s:I, s:o, s:o}", "env", str_list(cfg->env, cfg->nenv),
			  "cwd", cfg->cwd, "uid", (json_int_t)cfg->uid, "gid", (json_int_t)cfg->gid,
			  "gids", gids, "cmd", str_list(cfg->cmd, cfg->ncmd));
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:o}", "digest", m->digest, "name",
			      m->name, "source", m->source, "created", m->created, "size",
			      (json_int_t)m->size, "config", c);
	char *text = NULL;
	int rc = -1, fd = -1;

	if (o && recipe)
		json_object_set(o, "recipe", recipe);
	if (!o || !(text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
		errbuf_set(err, errlen, "cannot encode image.json");
		goto out;
	}
	size_t n = strlen(text);
	text[n] = '\n'; /* the NUL goes out as the last line's end */
	fd = openat(dirfd, "image.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	int w = fd < 0 ? -errno : io_write_full(fd, text, n + 1);
	if (w == 0 && fsync(fd) < 0)
		w = -errno;
	if (w < 0) {
		errbuf_set(err, errlen, "cannot write image.json: %s", strerror(-w));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0 && close(fd) < 0 && rc == 0)
		rc = errbuf_fail(err, errlen, -1, "cannot write image.json: %s", strerror(errno));
	free(text);
	json_decref(o);
	return rc;
}
