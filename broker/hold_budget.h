/* SPDX-License-Identifier: Apache-2.0 */
/* broker/hold_budget.h: how much a broker holds for approval. A held request keeps its whole
 * body in the broker's memory until a person decides (up to the approval TTL), so many
 * sessions holding large bodies could exhaust a shared broker's memory for everyone. Each
 * session has a budget of held bytes and held requests, and the broker one for all sessions;
 * a request that would exceed either is answered 503 at once. */
#ifndef BULKHEAD_BROKER_HOLD_BUDGET_H
#define BULKHEAD_BROKER_HOLD_BUDGET_H

#include <pthread.h>
#include <stddef.h>

/* Defaults: per session, and for the whole broker. */
#define HOLD_BUDGET_SESSION_BYTES ((size_t)64 << 20)
#define HOLD_BUDGET_SESSION_REQS  64
#define HOLD_BUDGET_TOTAL_BYTES	  ((size_t)256 << 20)
#define HOLD_BUDGET_TOTAL_REQS	  1024
/* HTTP/2 streams served at once (each holds a thread while open: h2_threads.c): a session's
 * and the broker's. Past either, a new stream is answered 503 and recorded. */
#define H2_STREAMS_SESSION 128
#define H2_STREAMS_TOTAL   1024

struct hold_budget {
	pthread_mutex_t lock;
	size_t max_bytes, max_reqs; /* limits */
	size_t bytes, reqs;	    /* held now */
};

void hold_budget_init(struct hold_budget *b, size_t max_bytes, size_t max_reqs);
void hold_budget_destroy(struct hold_budget *b);
/* Takes BYTES and REQS from SESSION and TOTAL (either may be NULL: no limit), from both or
 * from neither. 0, or -1 with *WHICH naming the budget that is spent ("session", "broker"). */
int hold_budget_take(struct hold_budget *session, struct hold_budget *total, size_t bytes,
		     size_t reqs, const char **which);
/* Gives back what hold_budget_take took. */
void hold_budget_give(struct hold_budget *session, struct hold_budget *total, size_t bytes,
		      size_t reqs);
/* "BYTES,COUNT" (e.g. "67108864,64") into *BYTES and *REQS; -1 when malformed or zero. */
int hold_budget_parse(const char *s, size_t *bytes, size_t *reqs);

#endif
