/* SPDX-License-Identifier: Apache-2.0 */
/* broker/decide.c: decide() — global denials, then the scope, then approval rules; default
 * deny (see decide.h). Address-level denials (deny_cidrs against what a name resolves to) are
 * checked where the address becomes known, in dest.c, with the same policy. */
#include "broker/decide.h"

#include <arpa/inet.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *decide_verdict_name(enum verdict v)
{
	return v == VERDICT_ALLOW ? "allow" : v == VERDICT_DENY ? "deny" : "approval";
}

const char *decide_layer_name(enum layer l)
{
	static const char *const names[] = { "global", "scope", "approval", "default" };

	return names[l];
}

/* Whether S ends with SUFFIX: exactly, or in any case (ANYCASE). */
static int ends_with(const char *s, const char *suffix, int anycase)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !(anycase ? strcasecmp : strcmp)(s + n - k, suffix);
}

int decide_read_only(const char *method, const char *path)
{
	char p[512];

	if (!strcmp(method, "GET") || !strcmp(method, "HEAD") || !strcmp(method, "OPTIONS"))
		return 1;
	snprintf(p, sizeof(p), "%.*s", (int)strcspn(path, "?"), path);
	return !strcmp(method, "POST") && ends_with(p, "/git-upload-pack", 0);
}

static int is_push(const struct decide_req *q)
{
	char p[512];

	snprintf(p, sizeof(p), "%.*s", (int)strcspn(q->path, "?"), q->path);
	/* Any case: a server that routes paths without regard to case still takes it for a push
	 * (holding too much is safe; the read-only fetch above stays exact, so no less is held). */
	return !strcmp(q->method, "POST") && ends_with(p, "/git-receive-pack", 1);
}

/* Whether approval rule R covers Q. *needs_body: R is about pushed refs, which Q's body holds. */
static int approval_covers(const struct policy_approval_rule *r, const struct decide_req *q,
			   int *needs_body)
{
	size_t i;

	if (!policy_host_match(r->host, q->host))
		return 0;
	/* Any case: paths are case-sensitive (RFC 3986), but some upstreams route them without
	 * regard to case (names of owners and repositories in forge APIs), and a rule that holds
	 * writes must not be stepped around by "/W/" for "/w/". Grants stay exact (narrower). */
	if (r->path_prefix && strncasecmp(q->path, r->path_prefix, strlen(r->path_prefix)))
		return 0;
	if (r->git_ref) {
		if (!is_push(q))
			return 0;
		if (q->n_git_refs == DECIDE_GIT_REFS_UNKNOWN) {
			*needs_body = 1;
			return 0;
		}
		for (i = 0; i < q->n_git_refs; i++)
			if (!fnmatch(r->git_ref, q->git_refs[i], 0))
				return 1;
		return 0;
	}
	if (!r->methods)
		return !decide_read_only(q->method, q->path);
	for (i = 0; i < r->n_methods; i++)
		if (!strcmp(r->methods[i], q->method))
			return 1;
	return 0;
}

static void deny(struct decision *d, enum layer l, const char *rule, const char *why)
{
	d->verdict = VERDICT_DENY;
	d->layer = l;
	snprintf(d->rule, sizeof(d->rule), "%s", rule);
	snprintf(d->why, sizeof(d->why), "%s", why);
}

/* 1. Global denials, by name and by address literal: nothing a scope says reaches past them.
 * Returns 1 (and fills D) when HOST is denied. */
static int global_denial(const struct policy *p, const char *host, struct decision *d)
{
	char rule[sizeof(d->rule)], why[sizeof(d->why)], buf[64];
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	const struct sockaddr *sa = NULL;
	const char *hit;

	if ((hit = policy_host_denied(p, host))) {
		snprintf(rule, sizeof(rule), "deny_hosts:%s", hit);
		snprintf(why, sizeof(why), "denied by the global policy: %s is never reachable",
			 host);
		deny(d, LAYER_GLOBAL, rule, why);
		return 1;
	}
	if (inet_pton(AF_INET, host, &a4.sin_addr) == 1)
		sa = (const struct sockaddr *)&a4;
	else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1)
		sa = (const struct sockaddr *)&a6;
	if (sa && (hit = policy_addr_denied(p, sa, buf, sizeof(buf)))) {
		snprintf(rule, sizeof(rule), "deny_cidrs:%s", hit);
		snprintf(why, sizeof(why),
			 "denied by the global policy: %s is in a forbidden network", host);
		deny(d, LAYER_GLOBAL, rule, why);
		return 1;
	}
	return 0;
}

void decide_connect(const struct policy *p, const struct rules *scope, const char *host, int port,
		    struct decision *d)
{
	char why[sizeof(d->why)];

	memset(d, 0, sizeof(*d));
	if (global_denial(p, host, d))
		return;
	if (!rules_https_host(scope, host, port)) {
		snprintf(why, sizeof(why), "denied: no https rule for %s:%d", host, port);
		deny(d, LAYER_DEFAULT, "none", why);
		return;
	}
	d->verdict = VERDICT_ALLOW;
	d->layer = LAYER_SCOPE;
	snprintf(d->rule, sizeof(d->rule), "connect:%s", host);
}

void decide(const struct policy *p, const struct rules *scope, const struct decide_req *q,
	    struct decision *d)
{
	struct rules_req rq = { q->method, q->host, q->port, q->path };
	char rule[sizeof(d->rule)], why[sizeof(d->why)];
	const char *hit;
	size_t i;

	memset(d, 0, sizeof(*d));
	if (global_denial(p, q->host, d))
		return;
	/* 2. The session's scope: the secrets bound to this destination, else the allow list. */
	for (i = 0; i < scope->n_secrets && d->n_inject < DECIDE_MAX_INJECT; i++) {
		const struct rules_dest *m = rules_secret_match(&scope->secrets[i], &rq);

		if (!m)
			continue;
		if ((hit = policy_secret_denied(p, scope->secrets[i].name))) {
			snprintf(rule, sizeof(rule), "deny_secrets:%s", hit);
			snprintf(why, sizeof(why),
				 "denied by the global policy: secret %s may not be used",
				 scope->secrets[i].name);
			deny(d, LAYER_GLOBAL, rule, why);
			return;
		}
		if (!d->dest)
			d->dest = m;
		/* All credentials for one request go over the same kind of connection. */
		if (m->scheme == d->dest->scheme)
			d->inject[d->n_inject++] = &scope->secrets[i];
	}
	if (!d->dest)
		d->dest = rules_allow_match(scope, &rq);
	if (!d->dest) {
		snprintf(why, sizeof(why), "denied: no rule allows %s %s://%s%s", q->method,
			 q->https ? "https" : "http", q->host, q->path);
		deny(d, LAYER_DEFAULT, "none", why);
		return;
	}
	if (d->n_inject)
		snprintf(d->rule, sizeof(d->rule), "secret:%s", d->inject[0]->name);
	else
		snprintf(d->rule, sizeof(d->rule), "allow:%s", d->dest->host);
	if (q->https && d->dest->scheme != RULES_HTTPS) {
		snprintf(why, sizeof(why),
			 "denied: the rule for %s is plain http, the request asks for https",
			 q->host);
		d->verdict = VERDICT_DENY;
		d->layer = LAYER_SCOPE;
		snprintf(d->why, sizeof(d->why), "%s", why);
		d->dest = NULL;
		d->n_inject = 0;
		return;
	}
	d->verdict = VERDICT_ALLOW;
	d->layer = LAYER_SCOPE;
	/* 3. Approval rules: an allowed request may still need a person's yes. */
	for (i = 0; p && i < p->n_approvals; i++) {
		int needs_body = 0;

		if (approval_covers(&p->approvals[i], q, &needs_body)) {
			d->verdict = VERDICT_APPROVAL;
			d->layer = LAYER_APPROVAL;
			snprintf(d->rule, sizeof(d->rule), "require_approval[%zu]", i);
			return;
		}
		if (needs_body)
			d->needs_body = 1;
	}
}
