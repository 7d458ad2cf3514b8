/* SPDX-License-Identifier: Apache-2.0 */
/* broker/decide.h: the one function that decides a request. Three layers, in this order:
 * the global policy's denials (the organisation's backstop), the session's scope (which
 * destinations, which secrets), then the global policy's approval rules; anything no rule
 * allows is denied. The proxy, `bulkhead policy explain` and the tests all call decide(). */
#ifndef BULKHEAD_BROKER_DECIDE_H
#define BULKHEAD_BROKER_DECIDE_H

#include <stddef.h>

#include "broker/policy.h"
#include "broker/rules.h"

enum verdict { VERDICT_ALLOW, VERDICT_DENY, VERDICT_APPROVAL };
enum layer { LAYER_GLOBAL, LAYER_SCOPE, LAYER_APPROVAL, LAYER_DEFAULT };

#define DECIDE_MAX_INJECT	16
#define DECIDE_GIT_REFS_UNKNOWN ((size_t)-1)

struct decide_req {
	const char *method, *host;
	int port;	  /* -1: the scheme's default */
	const char *path; /* origin form, starts with '/' */
	int https;	  /* the guest asked for https (an https URL or a CONNECT tunnel) */
	/* For a git push (POST .../git-receive-pack): the refs it updates, or
	 * DECIDE_GIT_REFS_UNKNOWN while its body has not been read. */
	const char *const *git_refs;
	size_t n_git_refs;
};

struct decision {
	enum verdict verdict;
	enum layer layer;
	char rule[320]; /* the rule that decided: "deny_hosts:*.corp", "secret:api", ... */
	char why[320];	/* one sentence for the guest (and the audit log) when not allowed */
	const struct rules_dest *dest; /* where an allowed request goes */
	const struct rules_secret *inject[DECIDE_MAX_INJECT];
	size_t n_inject;
	/* VERDICT_APPROVAL only when the body is known: a push rule cannot be judged before. */
	int needs_body;
};

void decide(const struct policy *p, const struct rules *scope, const struct decide_req *q,
	    struct decision *d);

/* The same three layers for CONNECT HOST:PORT, before any request inside is known: global
 * denials, then whether an https rule of the scope names that host and port. */
void decide_connect(const struct policy *p, const struct rules *scope, const char *host, int port,
		    struct decision *d);

const char *decide_verdict_name(enum verdict v);
const char *decide_layer_name(enum layer l);

/* 1 for requests that only read: GET, HEAD, OPTIONS, and git's fetch (POST .../git-upload-pack
 * and GET .../info/refs?service=git-upload-pack). */
int decide_read_only(const char *method, const char *path);

#endif
