/* SPDX-License-Identifier: Apache-2.0 */
/* broker/policy_load.c: loading the global policy (see policy.h) — strict JSON, every error
 * naming the value's line and column (lib/json_where.h) and its path in the file. The
 * questions a loaded policy answers are in policy.c. */
#include "broker/policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "broker/hostname.h"
#include "broker/reqpath.h"
#include "lib/io.h"
#include "lib/json_strict.h"
#include "lib/json_where.h"

/* A failure at a path; turned into "line L, column C: PATH: message" at the end. */
struct where {
	char path[128];
	char msg[256];
};

static int bad(struct where *w, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct where *w, const char *path, const char *fmt, ...)
{
	va_list ap;

	snprintf(w->path, sizeof(w->path), "%s", path);
	va_start(ap, fmt);
	vsnprintf(w->msg, sizeof(w->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* Replaces each host pattern of V (n of them, at KEY) by its canonical spelling. */
static int canon_patterns(char **v, size_t n, const char *key, struct where *w)
{
	char canon[HOSTNAME_MAX + 3], path[128];
	const char *why;
	size_t i;

	for (i = 0; i < n; i++) {
		char *c;

		snprintf(path, sizeof(path), "%s[%zu]", key, i);
		if (hostname_canon_pattern(v[i], canon, &why))
			return bad(w, path, "\"%.64s\": %s", v[i], why);
		c = strdup(canon);
		if (!c)
			return bad(w, path, "out of memory");
		free(v[i]);
		v[i] = c;
	}
	return 0;
}

/* An array of strings at KEY, each checked by OK (NULL: any non-empty string). */
static int str_array(json_t *root, const char *key, char ***out, size_t *n, int (*ok)(const char *),
		     const char *what, struct where *w)
{
	json_t *a = json_object_get(root, key), *v;
	char path[128];
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a))
		return bad(w, key, "must be an array of %s", what);
	*out = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!*out)
		return bad(w, key, "out of memory");
	json_array_foreach(a, i, v)
	{
		snprintf(path, sizeof(path), "%s[%zu]", key, i);
		if (!json_is_string(v) || !json_string_length(v) ||
		    strlen(json_string_value(v)) != json_string_length(v) ||
		    (ok && !ok(json_string_value(v))))
			return bad(w, path, "must be %s", what);
		(*out)[i] = strdup(json_string_value(v));
		if (!(*out)[i])
			return bad(w, path, "out of memory");
		*n = i + 1;
	}
	return 0;
}

static int parse_cidr(const char *s, struct policy_cidr *c)
{
	char buf[64], *slash, *end;
	long pfx;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, c->addr) == 1)
		c->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, c->addr) == 1)
		c->family = AF_INET6;
	else
		return -1;
	if (!slash) {
		c->prefix = c->family == AF_INET ? 32 : 128;
		return 0;
	}
	pfx = strtol(slash + 1, &end, 10);
	if (end == slash + 1 || *end || pfx < 0 || pfx > (c->family == AF_INET ? 32 : 128))
		return -1;
	c->prefix = (unsigned)pfx;
	return 0;
}

static int share_path_ok(const char *s)
{
	return s[0] == '/' || !strncmp(s, "~/", 2);
}

static int uint_field(json_t *o, const char *key, const char *path, unsigned long max,
		      unsigned long *out, struct where *w)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    (unsigned long long)json_integer_value(v) > max)
		return bad(w, path, "must be a whole number from 1 to %lu", max);
	*out = (unsigned long)json_integer_value(v);
	return 0;
}

/* The unknown key is named by its own path, so the error points at its line and column. */
static int only_keys(json_t *o, const char *const *keys, const char *where, struct where *w)
{
	const char *k = json_strict_unknown(o, keys);
	char path[128];

	if (!k)
		return 0;
	snprintf(path, sizeof(path), "%s%s%s", where, *where ? "." : "", k);
	return bad(w, path, "unknown key \"%s\"", k);
}

static int method_ok(const char *m)
{
	size_t i;

	for (i = 0; m[i]; i++)
		if (!isupper((unsigned char)m[i]))
			return 0;
	return i && i < 16;
}

static int parse_approval(json_t *o, size_t idx, struct policy_approval_rule *r, struct where *w)
{
	static const char *const keys[] = { "host", "methods", "path_prefix", "git_ref", NULL };
	char where[64], path[128], canon[HOSTNAME_MAX + 3];
	const char *why = "must be a host name or *.suffix";
	json_t *v;

	snprintf(where, sizeof(where), "require_approval[%zu]", idx);
	if (!json_is_object(o))
		return bad(w, where, "an approval rule must be an object");
	if (only_keys(o, keys, where, w))
		return -1;
	v = json_object_get(o, "host");
	snprintf(path, sizeof(path), "%s.host", where);
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) ||
	    hostname_canon_pattern(json_string_value(v), canon, &why))
		return bad(w, v ? path : where, "\"host\" %s", why);
	r->host = strdup(canon);
	if (str_array(o, "methods", &r->methods, &r->n_methods, method_ok,
		      "upper-case HTTP methods", w)) {
		/* str_array named the path relative to this rule: make it whole. */
		char sub[sizeof(w->path) + 64];

		if (snprintf(sub, sizeof(sub), "%s.%s", where, w->path) >= (int)sizeof(w->path))
			sub[sizeof(w->path) - 1] = '\0';
		memcpy(w->path, sub, sizeof(w->path));
		return -1;
	}
	v = json_object_get(o, "path_prefix");
	snprintf(path, sizeof(path), "%s.path_prefix", where);
	if (v && (!json_is_string(v) || json_string_value(v)[0] != '/'))
		return bad(w, path, "\"path_prefix\" must start with /");
	if (v)
		r->path_prefix = strdup(json_string_value(v));
	/* Requests are matched in their canonical spelling (reqpath.h); so is the prefix. */
	if (r->path_prefix &&
	    reqpath_canon_path(r->path_prefix, strlen(r->path_prefix), r->path_prefix, &why))
		return bad(w, path, "\"path_prefix\": %s", why);
	v = json_object_get(o, "git_ref");
	snprintf(path, sizeof(path), "%s.git_ref", where);
	if (v && (!json_is_string(v) || strncmp(json_string_value(v), "refs/", 5)))
		return bad(w, path, "\"git_ref\" must be a ref glob starting with refs/");
	if (v)
		r->git_ref = strdup(json_string_value(v));
	if (!r->host || (json_object_get(o, "path_prefix") && !r->path_prefix) ||
	    (json_object_get(o, "git_ref") && !r->git_ref))
		return bad(w, where, "out of memory");
	return 0;
}

/* deny_hosts (canonical spellings), deny_secrets, deny_share_paths, deny_cidrs. */
static int load_denials(struct policy *p, json_t *root, struct where *w)
{
	char **cidrs = NULL, path[64];
	size_t n_cidrs = 0, i;
	int rc = -1;

	if (str_array(root, "deny_hosts", &p->deny_hosts, &p->n_deny_hosts, NULL,
		      "host names or *.suffix patterns", w) ||
	    canon_patterns(p->deny_hosts, p->n_deny_hosts, "deny_hosts", w) ||
	    str_array(root, "deny_secrets", &p->deny_secrets, &p->n_deny_secrets, NULL,
		      "secret names or globs", w) ||
	    str_array(root, "deny_share_paths", &p->deny_share_paths, &p->n_deny_share_paths,
		      share_path_ok, "absolute or ~/ paths", w) ||
	    str_array(root, "deny_cidrs", &cidrs, &n_cidrs, NULL, "CIDRs", w))
		goto out;
	p->deny_cidrs = calloc(n_cidrs + 1, sizeof(*p->deny_cidrs));
	if (!p->deny_cidrs) {
		bad(w, "deny_cidrs", "out of memory");
		goto out;
	}
	for (i = 0; i < n_cidrs; i++) {
		snprintf(path, sizeof(path), "deny_cidrs[%zu]", i);
		if (parse_cidr(cidrs[i], &p->deny_cidrs[i])) {
			bad(w, path, "\"%s\" is not an address or address/prefix", cidrs[i]);
			goto out;
		}
		p->n_deny_cidrs = i + 1;
	}
	rc = 0;
out:
	for (i = 0; cidrs && cidrs[i]; i++)
		free(cidrs[i]);
	free(cidrs);
	return rc;
}

/* limits: memory, vCPUs, a session's lifetime; forbid_no_jail. */
static int load_limits(struct policy *p, json_t *root, struct where *w)
{
	static const char *const limit_keys[] = { "max_mem_mib", "max_cpus", "max_session_seconds",
						  NULL };
	json_t *o = json_object_get(root, "limits");
	unsigned long v = 0;

	if (o) {
		if (!json_is_object(o))
			return bad(w, "limits", "must be an object");
		if (only_keys(o, limit_keys, "limits", w) ||
		    uint_field(o, "max_mem_mib", "limits.max_mem_mib", 1 << 20, &v, w))
			return -1;
		p->max_mem_mib = (unsigned)v;
		v = 0;
		if (uint_field(o, "max_cpus", "limits.max_cpus", 1024, &v, w))
			return -1;
		p->max_cpus = (unsigned)v;
		if (uint_field(o, "max_session_seconds", "limits.max_session_seconds",
			       10UL * 365 * 24 * 3600, &p->max_session_seconds, w))
			return -1;
	}
	o = json_object_get(root, "forbid_no_jail");
	if (o && !json_is_boolean(o))
		return bad(w, "forbid_no_jail", "must be true or false");
	p->forbid_no_jail = json_is_true(o);
	return 0;
}

/* A glob of a name, or of a path relative to the share: a pattern that is absolute or climbs
 * out ("/etc/x", "../x", "a/./b") could never match, so it is refused, not ignored. */
static int pattern_ok(const char *s)
{
	const char *c = s;

	if (!*s || *s == '/')
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	for (; c; c = strchr(c, '/') ? strchr(c, '/') + 1 : NULL)
		if (!strncmp(c, "../", 3) || !strcmp(c, "..") || !strncmp(c, "./", 2) ||
		    !strcmp(c, ".") || *c == '/' || !*c)
			return 0;
	return 1;
}

/* share_secrets, share_secrets_allow, share_secret_patterns. */
static int load_share(struct policy *p, json_t *root, struct where *w)
{
	json_t *o = json_object_get(root, "share_secrets");

	if (o && (!json_is_string(o) || (strcmp(json_string_value(o), "refuse") &&
					  strcmp(json_string_value(o), "hide"))))
		return bad(w, "share_secrets", "must be \"refuse\" or \"hide\"");
	if (o)
		p->share_secrets = strcmp(json_string_value(o), "refuse") ? 2 : 1;
	o = json_object_get(root, "share_secrets_allow");
	if (o && !json_is_boolean(o))
		return bad(w, "share_secrets_allow", "must be true or false");
	p->share_secrets_no_allow = o && json_is_false(o);
	return str_array(root, "share_secret_patterns", &p->share_secret_patterns,
			 &p->n_share_secret_patterns, pattern_ok,
			 "globs of file names or of relative paths (no leading '/', no '.' or '..' "
			 "component), without control characters", w);
}

/* approval_ttl_seconds and require_approval. */
static int load_approvals(struct policy *p, json_t *root, struct where *w)
{
	unsigned long v = POLICY_DEFAULT_APPROVAL_TTL;
	json_t *o, *r;
	size_t i;

	if (uint_field(root, "approval_ttl_seconds", "approval_ttl_seconds", 7 * 24 * 3600, &v, w))
		return -1;
	p->approval_ttl_seconds = (unsigned)v;
	o = json_object_get(root, "require_approval");
	if (!o)
		return 0;
	if (!json_is_array(o))
		return bad(w, "require_approval", "must be an array of approval rules");
	p->approvals = calloc(json_array_size(o) + 1, sizeof(*p->approvals));
	if (!p->approvals)
		return bad(w, "require_approval", "out of memory");
	json_array_foreach(o, i, r)
	{
		p->n_approvals = i + 1;
		if (parse_approval(r, i, &p->approvals[i], w))
			return -1;
	}
	return 0;
}

static int load(struct policy *p, json_t *root, struct where *w)
{
	static const char *const keys[] = {
		"deny_hosts",		"deny_cidrs",	  "deny_secrets",
		"deny_share_paths",	"limits",	  "require_approval",
		"approval_ttl_seconds", "forbid_no_jail", "share_secrets",
		"share_secrets_allow",	"share_secret_patterns", NULL
	};

	if (!json_is_object(root))
		return bad(w, "", "the policy must be a JSON object");
	if (only_keys(root, keys, "", w) || load_denials(p, root, w) || load_limits(p, root, w) ||
	    load_approvals(p, root, w) || load_share(p, root, w))
		return -1;
	return 0;
}

int policy_load_json(struct policy *p, const char *json, char *err, size_t errlen)
{
	struct where w = { "", "" };
	json_error_t je;
	json_t *root;
	int line, col;

	memset(p, 0, sizeof(*p));
	root = json_loads(json, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen, "line %d, column %d: %s", je.line, je.column, je.text);
		return -1;
	}
	if (load(p, root, &w)) {
		if (json_where(json, w.path, &line, &col))
			line = col = 0;
		snprintf(err, errlen, "line %d, column %d: %s%s%s", line, col, w.path,
			 *w.path ? ": " : "", w.msg);
		json_decref(root);
		policy_free(p);
		return -1;
	}
	json_decref(root);
	return 0;
}

int policy_load_file(struct policy *p, const char *path, char *err, size_t errlen)
{
	char sub[400];
	int rc;

	memset(p, 0, sizeof(*p));
	char *buf = io_read_path(path, 1 << 20, NULL);
	if (!buf) {
		snprintf(err, errlen, "%s: %s", path,
			 errno == ERANGE ? "larger than 1 MiB" : strerror(errno));
		return -1;
	}
	rc = policy_load_json(p, buf, sub, sizeof(sub));
	if (rc)
		snprintf(err, errlen, "%s: %s", path, sub);
	free(buf);
	return rc;
}

static void free_strs(char **v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void policy_free(struct policy *p)
{
	size_t i;

	free_strs(p->deny_hosts, p->n_deny_hosts);
	free_strs(p->deny_secrets, p->n_deny_secrets);
	free_strs(p->deny_share_paths, p->n_deny_share_paths);
	free_strs(p->share_secret_patterns, p->n_share_secret_patterns);
	free(p->deny_cidrs);
	for (i = 0; p->approvals && i < p->n_approvals; i++) {
		free(p->approvals[i].host);
		free_strs(p->approvals[i].methods, p->approvals[i].n_methods);
		free(p->approvals[i].path_prefix);
		free(p->approvals[i].git_ref);
	}
	free(p->approvals);
	memset(p, 0, sizeof(*p));
}
