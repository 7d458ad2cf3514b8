/* SPDX-License-Identifier: Apache-2.0 */
/* broker/approvals.h: requests held for a person's decision. A connection thread whose request
 * an approval rule covers files it here and waits; `bulkhead approvals` (over the control
 * socket) lists, shows, approves or denies it. An approval belongs to exactly one held
 * request — the one whose SHA-256 it shows — and is used once: deciding it wakes that request
 * and removes it. Undecided after its TTL, or when its session ends, it is denied. */
#ifndef BULKHEAD_BROKER_APPROVALS_H
#define BULKHEAD_BROKER_APPROVALS_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#define APPROVAL_ID_LEN 12 /* hex characters */

enum approval_outcome {
	APPROVAL_APPROVED,
	APPROVAL_DENIED,
	APPROVAL_EXPIRED,
	APPROVAL_WITHDRAWN, /* WITHDRAWN(arg) said the request is no longer waiting */
};

/* What the person sees. Strings are copied. */
struct approval_info {
	const char *session, *method, *url, *rule, *secret; /* secret: a name or NULL */
	const char *summary;				    /* the body, made printable and cut */
	const char *sha256;				    /* hex, of the exact request */
	const char *const *git_refs;			    /* "OLD NEW REF" lines, or NULL */
	size_t n_git_refs;
};

struct approvals;

struct approvals *approvals_new(void);
void approvals_free(struct approvals *a);

/* Files a held request and waits up to TTL_S for a decision. Returns the outcome, with the id
 * in ID and the person's reason (or why it was denied without one) in reason. WITHDRAWN
 * (NULL: never), asked every APPROVAL_POLL_MS, ends the wait when it returns non-zero (the
 * guest is gone, or its connection was taken): the request leaves the list of those to
 * decide. */
#define APPROVAL_POLL_MS 200
enum approval_outcome approvals_wait(struct approvals *a, const struct approval_info *info,
				     unsigned ttl_s, int (*withdrawn)(void *arg), void *arg,
				     char id[APPROVAL_ID_LEN + 1], char *reason, size_t reasonlen);

/* Every pending approval (an array of objects). */
json_t *approvals_list(struct approvals *a);
/* Decides approval ID. Returns 0, or -1 with why in err (unknown, or already decided). */
int approvals_decide(struct approvals *a, const char *id, int approve, const char *reason,
		     char *err, size_t errlen);
/* Denies every pending approval of SESSION (it ended). */
void approvals_session_end(struct approvals *a, const char *session);

#endif
