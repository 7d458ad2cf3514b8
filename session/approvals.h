/* SPDX-License-Identifier: Apache-2.0 */
/* session/approvals.h: requests held for a person's decision, over every broker on this host. */
#ifndef BULKHEAD_SESSION_APPROVALS_H
#define BULKHEAD_SESSION_APPROVALS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* All pending approvals (a new array), each as its broker lists it plus "broker": the
 * control socket that holds it. A broker that cannot be asked is skipped and, when complain
 * is given, named to it. */
json_t *approvals_collect(void (*complain)(const char *why));
/* The approval with this id in what approvals_collect returned (borrowed), or NULL. */
json_t *approvals_find(json_t *all, const char *id);
/* Approves or denies one approval (from approvals_collect) at its broker; reason may be NULL.
 * 0, or -1 with why. */
int approvals_decide(json_t *a, bool approve, const char *reason, char *why, size_t whylen);

#endif
