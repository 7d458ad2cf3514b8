/* broker/policy.c: loading and querying the global policy (see policy.h). Every error names
 * the value's line and column (lib/json_where.h) and its path in the file. */
#include "broker/policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "broker/hostname.h"
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

static int load(struct policy *p, json_t *root, struct where *w)
{
	static const char *const keys[] = {
		"deny_hosts",		"deny_cidrs",	  "deny_secrets",
		"deny_share_paths",	"limits",	  "require_approval",
		"approval_ttl_seconds", "forbid_no_jail", NULL
	};
	static const char *const limit_keys[] = { "max_mem_mib", "max_cpus", "max_session_seconds",
						  NULL };
	char **cidrs = NULL, path[64];
	size_t n_cidrs = 0, i;
	unsigned long v = 0;
	json_t *o;
	int rc = -1;

	if (!json_is_object(root))
		return bad(w, "", "the policy must be a JSON object");
	if (only_keys(root, keys, "", w) ||
	    str_array(root, "deny_hosts", &p->deny_hosts, &p->n_deny_hosts, NULL,
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
	o = json_object_get(root, "limits");
	if (o) {
		if (!json_is_object(o)) {
			bad(w, "limits", "must be an object");
			goto out;
		}
		if (only_keys(o, limit_keys, "limits", w) ||
		    uint_field(o, "max_mem_mib", "limits.max_mem_mib", 1 << 20, &v, w))
			goto out;
		p->max_mem_mib = (unsigned)v;
		v = 0;
		if (uint_field(o, "max_cpus", "limits.max_cpus", 1024, &v, w))
			goto out;
		p->max_cpus = (unsigned)v;
		if (uint_field(o, "max_session_seconds", "limits.max_session_seconds",
			       10UL * 365 * 24 * 3600, &p->max_session_seconds, w))
			goto out;
	}
	o = json_object_get(root, "forbid_no_jail");
	if (o && !json_is_boolean(o)) {
		bad(w, "forbid_no_jail", "must be true or false");
		goto out;
	}
	p->forbid_no_jail = json_is_true(o);
	v = POLICY_DEFAULT_APPROVAL_TTL;
	if (uint_field(root, "approval_ttl_seconds", "approval_ttl_seconds", 7 * 24 * 3600, &v, w))
		goto out;
	p->approval_ttl_seconds = (unsigned)v;
	o = json_object_get(root, "require_approval");
	if (o) {
		json_t *r;

		if (!json_is_array(o)) {
			bad(w, "require_approval", "must be an array of approval rules");
			goto out;
		}
		p->approvals = calloc(json_array_size(o) + 1, sizeof(*p->approvals));
		if (!p->approvals) {
			bad(w, "require_approval", "out of memory");
			goto out;
		}
		json_array_foreach(o, i, r)
		{
			p->n_approvals = i + 1;
			if (parse_approval(r, i, &p->approvals[i], w))
				goto out;
		}
	}
	rc = 0;
out:
	for (i = 0; cidrs && cidrs[i]; i++)
		free(cidrs[i]);
	free(cidrs);
	return rc;
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
	char *buf = NULL, sub[400];
	FILE *f = fopen(path, "re");
	size_t n;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf = malloc((1 << 20) + 1);
	n = buf ? fread(buf, 1, 1 << 20, f) : 0;
	if (!buf || ferror(f) || (n == 1 << 20 && fgetc(f) != EOF)) {
		snprintf(err, errlen, "%s: unreadable or larger than 1 MiB", path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	buf[n] = '\0';
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

int policy_host_match(const char *pattern, const char *host)
{
	size_t pl = strlen(pattern), hl = strlen(host);

	if (!strncmp(pattern, "*.", 2))
		return hl > pl - 1 && !strcasecmp(host + hl - (pl - 1), pattern + 1);
	return !strcasecmp(pattern, host);
}

const char *policy_host_denied(const struct policy *p, const char *host)
{
	size_t i;

	for (i = 0; p && i < p->n_deny_hosts; i++)
		if (policy_host_match(p->deny_hosts[i], host))
			return p->deny_hosts[i];
	return NULL;
}

static int in_cidr(const struct policy_cidr *c, const unsigned char *a)
{
	unsigned full = c->prefix / 8, rest = c->prefix % 8;

	if (memcmp(a, c->addr, full))
		return 0;
	return !rest || ((a[full] ^ c->addr[full]) & (0xff00 >> rest) & 0xff) == 0;
}

const char *policy_addr_denied(const struct policy *p, const struct sockaddr *addr, char *buf,
			       size_t len)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const unsigned char compat[12] = { 0 };
	const unsigned char *a4 = NULL, *a6 = NULL;
	char txt[INET6_ADDRSTRLEN];
	size_t i;

	if (addr->sa_family == AF_INET) {
		a4 = (const unsigned char *)&((const struct sockaddr_in *)addr)->sin_addr;
	} else if (addr->sa_family == AF_INET6) {
		a6 = ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
		/* IPv4-mapped, IPv4-compatible and NAT64 addresses lead to an IPv4 address:
		 * judged as that address too, so no spelling of it escapes an IPv4 CIDR. */
		if (!memcmp(a6, mapped, 12) || !memcmp(a6, nat64, 12) ||
		    (!memcmp(a6, compat, 12) && (a6[12] | a6[13] | a6[14] | (a6[15] > 1))))
			a4 = a6 + 12;
	}
	for (i = 0; p && i < p->n_deny_cidrs; i++) {
		const struct policy_cidr *c = &p->deny_cidrs[i];

		if ((c->family == AF_INET && a4 && in_cidr(c, a4)) ||
		    (c->family == AF_INET6 && a6 && in_cidr(c, a6))) {
			inet_ntop(c->family, c->addr, txt, sizeof(txt));
			snprintf(buf, len, "%s/%u", txt, c->prefix);
			return buf;
		}
	}
	return NULL;
}

const char *policy_secret_denied(const struct policy *p, const char *name)
{
	size_t i;

	for (i = 0; p && i < p->n_deny_secrets; i++)
		if (!fnmatch(p->deny_secrets[i], name, 0))
			return p->deny_secrets[i];
	return NULL;
}

/* 1 when A is B or lies under it (both absolute, no trailing slash but for "/"). */
static int under(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (n == 1 && b[0] == '/')
		return 1;
	return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/');
}

/* True when directory A is B or lies below it, judged by device and inode while walking up
 * from A: a bind mount of B elsewhere is still B, whatever its path says. */
static int under_inode(const char *a, const char *b)
{
	struct stat sb, cur;
	int fd, up, depth, hit = 0;

	if (stat(b, &sb) < 0 || (fd = open(a, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 0;
	for (depth = 0; depth < 4096 && !hit; depth++) {
		struct stat parent;

		if (fstat(fd, &cur) < 0)
			break;
		hit = cur.st_dev == sb.st_dev && cur.st_ino == sb.st_ino;
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = up;
		/* The root is its own parent. */
		if (fd < 0 || fstat(fd, &parent) < 0 ||
		    (parent.st_dev == cur.st_dev && parent.st_ino == cur.st_ino))
			break;
	}
	if (fd >= 0)
		close(fd);
	return hit;
}

const char *policy_share_denied(const struct policy *p, const char *path, const char *home)
{
	char full[PATH_MAX], real[PATH_MAX];
	size_t i;

	for (i = 0; p && i < p->n_deny_share_paths; i++) {
		const char *d = p->deny_share_paths[i];
		size_t n;

		if (!strncmp(d, "~/", 2))
			snprintf(full, sizeof(full), "%s/%s", home && *home ? home : "/", d + 2);
		else
			snprintf(full, sizeof(full), "%s", d);
		/* Judge the path as it really is on this host when it exists. */
		if (realpath(full, real))
			snprintf(full, sizeof(full), "%s", real);
		n = strlen(full);
		while (n > 1 && full[n - 1] == '/')
			full[--n] = '\0';
		if (under(path, full) || under(full, path) || under_inode(path, full))
			return d;
	}
	return NULL;
}

/* A destination the policy forbids by name, by its IP literal or by an address it lists. */
static const char *dest_denied(const struct policy *p, const struct rules_dest *d, char *buf,
			       size_t len, const char **kind)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	const char *why;
	size_t k;

	*kind = "deny_hosts";
	if ((why = policy_host_denied(p, d->host)))
		return why;
	*kind = "deny_cidrs";
	if (inet_pton(AF_INET, d->host, &a4.sin_addr) == 1 &&
	    (why = policy_addr_denied(p, (struct sockaddr *)&a4, buf, len)))
		return why;
	if (inet_pton(AF_INET6, d->host, &a6.sin6_addr) == 1 &&
	    (why = policy_addr_denied(p, (struct sockaddr *)&a6, buf, len)))
		return why;
	for (k = 0; k < d->n_addrs; k++)
		if ((why = policy_addr_denied(p, (const struct sockaddr *)&d->addrs[k], buf, len)))
			return why;
	return NULL;
}

int policy_check_scope(const struct policy *p, const struct rules *scope, char *err, size_t errlen)
{
	const char *why, *kind;
	char buf[64];
	size_t i, j;

	if (!p)
		return 0;
	for (i = 0; i < scope->n_secrets; i++) {
		const struct rules_secret *s = &scope->secrets[i];

		if ((why = policy_secret_denied(p, s->name))) {
			snprintf(err, errlen,
				 "the scope names secret \"%s\", which the global policy forbids "
				 "(deny_secrets: \"%s\")",
				 s->name, why);
			return -1;
		}
		for (j = 0; j < s->n_dests; j++)
			if ((why = dest_denied(p, &s->dests[j], buf, sizeof(buf), &kind))) {
				snprintf(err, errlen,
					 "the scope sends secret \"%s\" to %s, which the global "
					 "policy forbids (%s: \"%s\")",
					 s->name, s->dests[j].host, kind, why);
				return -1;
			}
	}
	if (scope->work && (why = policy_share_denied(p, scope->work, getenv("HOME")))) {
		snprintf(err, errlen,
			 "the scope shares %s, which the global policy forbids (deny_share_paths: "
			 "\"%s\")",
			 scope->work, why);
		return -1;
	}
	for (i = 0; i < scope->n_allow; i++)
		if ((why = dest_denied(p, &scope->allow[i], buf, sizeof(buf), &kind))) {
			snprintf(err, errlen,
				 "the scope allows %s, which the global policy forbids "
				 "(%s: \"%s\")",
				 scope->allow[i].host, kind, why);
			return -1;
		}
	return 0;
}
