/* SPDX-License-Identifier: Apache-2.0 */
/* broker/hold_budget.c: budgets of bytes and requests held for approval (see hold_budget.h).
 * A session's lock is always taken before the broker's, so two takers never wait on each
 * other in opposite orders. */
#include "broker/hold_budget.h"

#include <errno.h>
#include <stdlib.h>

void hold_budget_init(struct hold_budget *b, size_t max_bytes, size_t max_reqs)
{
	pthread_mutex_init(&b->lock, NULL);
	b->max_bytes = max_bytes;
	b->max_reqs = max_reqs;
	b->bytes = b->reqs = 0;
}

void hold_budget_destroy(struct hold_budget *b)
{
	pthread_mutex_destroy(&b->lock);
}

/* Whether B (locked) has room for BYTES and REQS more. */
static int fits(const struct hold_budget *b, size_t bytes, size_t reqs)
{
	return b->max_bytes - b->bytes >= bytes && b->max_reqs - b->reqs >= reqs;
}

int hold_budget_take(struct hold_budget *session, struct hold_budget *total, size_t bytes,
		     size_t reqs, const char **which)
{
	int rc = -1;

	if (session)
		pthread_mutex_lock(&session->lock);
	if (total)
		pthread_mutex_lock(&total->lock);
	if (session && !fits(session, bytes, reqs))
		*which = "session";
	else if (total && !fits(total, bytes, reqs))
		*which = "broker";
	else {
		rc = 0;
		if (session) {
			session->bytes += bytes;
			session->reqs += reqs;
		}
		if (total) {
			total->bytes += bytes;
			total->reqs += reqs;
		}
	}
	if (total)
		pthread_mutex_unlock(&total->lock);
	if (session)
		pthread_mutex_unlock(&session->lock);
	return rc;
}

static void give(struct hold_budget *b, size_t bytes, size_t reqs)
{
	pthread_mutex_lock(&b->lock);
	b->bytes -= bytes < b->bytes ? bytes : b->bytes;
	b->reqs -= reqs < b->reqs ? reqs : b->reqs;
	pthread_mutex_unlock(&b->lock);
}

void hold_budget_give(struct hold_budget *session, struct hold_budget *total, size_t bytes,
		      size_t reqs)
{
	if (session)
		give(session, bytes, reqs);
	if (total)
		give(total, bytes, reqs);
}

int hold_budget_parse(const char *s, size_t *bytes, size_t *reqs)
{
	char *end;
	unsigned long long b, r;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	b = strtoull(s, &end, 10);
	if (errno || *end != ',' || end[1] < '0' || end[1] > '9')
		return -1;
	r = strtoull(end + 1, &end, 10);
	if (errno || *end || !b || !r || b > (1ULL << 40) || r > 1000000)
		return -1;
	*bytes = (size_t)b;
	*reqs = (size_t)r;
	return 0;
}
