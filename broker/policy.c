/* SPDX-License-Identifier: Apache-2.0 */
/* broker/policy.c: the questions the global policy answers (see policy.h): is this host, address,
 * secret or share denied, and does a session's scope ask for anything it forbids. Loading is in
 * policy_load.c. */
#include "broker/policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>


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
