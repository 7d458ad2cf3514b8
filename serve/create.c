/* SPDX-License-Identifier: Apache-2.0 */
/* serve/create.c: a create request (POST /v1/sessions) checked field by field: unknown
 * fields, types and ranges (the bounds from session/request_fields.h, the table the CLI's
 * options come from too), paths, the environment and the rules inside the work directory.
 * Nothing starts here; serve/sessions.c decides how the checked request is served. */
#include "session/request_fields.h"
#include "session/rundir.h"
#include "session/share_rules.h"
#include "lib/json_strict.h"
#include "serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const create_keys[] = {
	"image",
	"work",
	"work_ro",
	"scope",
	"vault",
	"ca_file",
	"broker",
	"audit",
	"mem_mib",
	"cpus",
	"mem_limit_mib",
	"timeout_s",
	"env",
	"pool",
	"work_rules",
	"share_secrets",
	"share_secrets_allow",
	NULL,
};

static int str_field(json_t *body, const char *key, const char **out, bool abs_path, char *why,
		     size_t whylen)
{
	json_t *v = json_object_get(body, key);
	if (!v || json_is_null(v))
		return 0;
	const char *s = json_string_value(v);
	if (!s || !*s || strlen(s) >= PATH_MAX - 64 || (abs_path && s[0] != '/')) {
		snprintf(why, whylen, "\"%s\" must be %s", key,
			 abs_path ? "an absolute path" : "a non-empty string");
		return -1;
	}
	*out = s;
	return 0;
}

/* A number of the session request: its bounds are its field's (session/request_fields.h). */
static int num_field(json_t *body, const char *key, double *out, char *why, size_t whylen)
{
	const struct request_field *f = request_field_by_key(key);
	json_t *v = json_object_get(body, key);
	if (!v || json_is_null(v))
		return 0;
	if (!f || !json_is_number(v) || (f->type == REQ_UINT && !json_is_integer(v)))
		return request_field_number_ok(f, -1, why, whylen);
	*out = json_number_value(v);
	return request_field_number_ok(f, *out, why, whylen);
}

static int bool_field(json_t *body, const char *key, bool *out, char *why, size_t whylen)
{
	json_t *v = json_object_get(body, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(why, whylen, "\"%s\" must be true or false", key);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

/* An environment object: names without '=' and values without NUL, within bounds. */
int serve_env_check(json_t *env, size_t max, char *why, size_t whylen)
{
	if (!env || json_is_null(env))
		return 0;
	if (!json_is_object(env) || json_object_size(env) > max) {
		snprintf(why, whylen, "\"env\" must be an object of at most %zu names", max);
		return -1;
	}
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v)
	{
		size_t vlen = json_string_length(v);
		if (!*k || strchr(k, '=') || strlen(k) > 255 || !json_is_string(v) || vlen > 4096 ||
		    strlen(json_string_value(v)) != vlen) {
			snprintf(why, whylen,
				 "\"env\": each name non-empty without '=' (at most 255 bytes), "
				 "each value a string of at most 4096 bytes without NUL");
			return -1;
		}
	}
	return 0;
}

/* Whether dir is, holds or is inside --state or the run directory (or is under /proc): a
 * guest there could rewrite the daemon's records. */
static bool work_is_ours(const char *dir)
{
	char real[PATH_MAX], base[PATH_MAX], rstate[PATH_MAX];
	if (!realpath(dir, real))
		return false; /* the supervisor says why it cannot share it */
	const char *ours[2] = { realpath(serve.state, rstate), NULL };
	if (rundir_base(base, sizeof(base)) == 0)
		ours[1] = base;
	if (!strncmp(real, "/proc", 5) && (!real[5] || real[5] == '/'))
		return true;
	for (size_t i = 0; i < 2; i++) {
		if (!ours[i])
			continue;
		size_t a = strlen(real), b = strlen(ours[i]);
		size_t n = a < b ? a : b;
		if (!strncmp(real, ours[i], n) &&
		    (a == b || (a < b ? ours[i][a] == '/' || !strcmp(real, "/") : real[b] == '/')))
			return true;
	}
	return false;
}

int serve_create_parse(json_t *body, struct serve_create *c, char *why, size_t whylen)
{
	memset(c, 0, sizeof(*c));
	c->pool = true;
	const char *unknown = json_strict_unknown(body, create_keys);
	if (unknown) {
		snprintf(why, whylen, "unknown field \"%s\"", unknown);
		return -1;
	}
	double mem = 0, cpus = 0, limit = 0, timeout = 0;
	json_t *scope = json_object_get(body, "scope");
	if (json_is_object(scope))
		c->scope_inline = scope;
	else if (str_field(body, "scope", &c->scope_path, true, why, whylen) < 0)
		return -1;
	if (str_field(body, "image", &c->image, false, why, whylen) < 0 ||
	    str_field(body, "work", &c->work, true, why, whylen) < 0 ||
	    str_field(body, "vault", &c->vault, true, why, whylen) < 0 ||
	    str_field(body, "ca_file", &c->ca_file, true, why, whylen) < 0 ||
	    str_field(body, "broker", &c->broker, true, why, whylen) < 0 ||
	    str_field(body, "audit", &c->audit, true, why, whylen) < 0 ||
	    bool_field(body, "work_ro", &c->work_ro, why, whylen) < 0 ||
	    bool_field(body, "pool", &c->pool, why, whylen) < 0 ||
	    num_field(body, "mem_mib", &mem, why, whylen) < 0 ||
	    num_field(body, "cpus", &cpus, why, whylen) < 0 ||
	    num_field(body, "mem_limit_mib", &limit, why, whylen) < 0 ||
	    num_field(body, "timeout_s", &timeout, why, whylen) < 0)
		return -1;
	if ((c->work && strchr(c->work, ':')) || (c->image && strchr(c->image, '/'))) {
		snprintf(why, whylen, "\"%s\" may not hold '%c'",
			 c->work && strchr(c->work, ':') ? "work" : "image",
			 c->work && strchr(c->work, ':') ? ':' : '/');
		return -1;
	}
	/* The files a broker reads must be files: a FIFO would hold the session's start. */
	const char *files[] = { c->scope_path, c->vault, c->ca_file };
	const char *names[] = { "scope", "vault", "ca_file" };
	for (size_t i = 0; i < 3; i++) {
		struct stat st;
		if (files[i] && (stat(files[i], &st) < 0 || !S_ISREG(st.st_mode))) {
			snprintf(why, whylen, "\"%s\": %s is not a regular file", names[i],
				 files[i]);
			return -1;
		}
	}
	if (serve_share_parse(body, c, why, whylen) < 0)
		return -1;
	if (c->work && work_is_ours(c->work)) {
		snprintf(why, whylen, "\"work\": %s holds or is inside the daemon's own files",
			 c->work);
		return -1;
	}
	if ((c->vault || c->ca_file || c->audit) && !c->scope_path && !c->scope_inline) {
		snprintf(why, whylen, "\"vault\", \"ca_file\" and \"audit\" need a \"scope\"");
		return -1;
	}
	if (c->broker && !c->scope_path && !c->scope_inline) {
		snprintf(why, whylen, "\"broker\" needs a \"scope\" to register");
		return -1;
	}
	c->mem_mib = (unsigned)mem;
	c->cpus = (unsigned)cpus;
	c->mem_limit_mib = (unsigned)limit;
	c->timeout_s = timeout;
	c->env = json_object_get(body, "env");
	return serve_env_check(c->env, SERVE_ENV_MAX, why, whylen);
}
