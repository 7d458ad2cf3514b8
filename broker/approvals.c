/* SPDX-License-Identifier: Apache-2.0 */
/* broker/approvals.c: the queue of held requests (see approvals.h). One mutex; each held
 * request waits on its own condition variable with a deadline. */
#include "broker/approvals.h"

#include "lib/mono.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

struct pending {
	char id[APPROVAL_ID_LEN + 1];
	json_t *info; /* what `approvals show` prints */
	char *session;
	time_t expires;
	int decided; /* 0 pending, else 1 + enum approval_outcome */
	char reason[256];
	pthread_cond_t cond;
	struct pending *next;
};

struct approvals {
	pthread_mutex_t lock;
	struct pending *head;
};

struct approvals *approvals_new(void)
{
	struct approvals *a = calloc(1, sizeof(*a));

	if (a)
		pthread_mutex_init(&a->lock, NULL);
	return a;
}

void approvals_free(struct approvals *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *info_json(const struct approval_info *in, const char *id, time_t created,
			 time_t expires)
{
	json_t *o = json_object(), *refs = json_array();
	size_t i;

	for (i = 0; in->git_refs && i < in->n_git_refs; i++)
		json_array_append_new(refs, json_string(in->git_refs[i]));
	json_object_set_new(o, "id", json_string(id));
	json_object_set_new(o, "session", str_or_null(in->session));
	json_object_set_new(o, "method", str_or_null(in->method));
	json_object_set_new(o, "url", str_or_null(in->url));
	json_object_set_new(o, "rule", str_or_null(in->rule));
	json_object_set_new(o, "secret", str_or_null(in->secret));
	json_object_set_new(o, "body", str_or_null(in->summary));
	json_object_set_new(o, "sha256", str_or_null(in->sha256));
	json_object_set_new(o, "git_refs", refs);
	json_object_set_new(o, "created", json_integer((json_int_t)created));
	json_object_set_new(o, "expires", json_integer((json_int_t)expires));
	return o;
}

static void unlink_pending(struct approvals *a, struct pending *p)
{
	struct pending **pp;

	for (pp = &a->head; *pp && *pp != p; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = p->next;
}

/* The earlier of DEADLINE and APPROVAL_POLL_MS from now (CLOCK_MONOTONIC). */
static struct timespec next_look(const struct timespec *deadline)
{
	struct timespec t;

	t = mono_deadline(APPROVAL_POLL_MS);
	if (t.tv_sec > deadline->tv_sec ||
	    (t.tv_sec == deadline->tv_sec && t.tv_nsec > deadline->tv_nsec))
		return *deadline;
	return t;
}

enum approval_outcome approvals_wait(struct approvals *a, const struct approval_info *info,
				     unsigned ttl_s, int (*withdrawn)(void *arg), void *arg,
				     char id[APPROVAL_ID_LEN + 1], char *reason, size_t reasonlen)
{
	struct pending *p = calloc(1, sizeof(*p));
	unsigned char rnd[APPROVAL_ID_LEN / 2];
	pthread_condattr_t ca;
	struct timespec deadline;
	enum approval_outcome out;
	time_t now = time(NULL);
	size_t i;

	if (!p || RAND_bytes(rnd, sizeof(rnd)) != 1) {
		free(p);
		snprintf(reason, reasonlen, "the broker could not file the approval");
		id[0] = '\0';
		return APPROVAL_DENIED;
	}
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(p->id + 2 * i, 3, "%02x", rnd[i]);
	memcpy(id, p->id, sizeof(p->id));
	p->expires = now + (time_t)ttl_s;
	p->session = strdup(info->session ? info->session : "-");
	p->info = info_json(info, p->id, now, p->expires);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	deadline = mono_deadline((int64_t)ttl_s * 1000);

	pthread_mutex_lock(&a->lock);
	p->next = a->head;
	a->head = p;
	while (!p->decided) {
		struct timespec until = withdrawn ? next_look(&deadline) : deadline;

		if (pthread_cond_timedwait(&p->cond, &a->lock, &until) != ETIMEDOUT || p->decided)
			continue;
		if (until.tv_sec == deadline.tv_sec && until.tv_nsec == deadline.tv_nsec) {
			p->decided = 1 + APPROVAL_EXPIRED;
			snprintf(p->reason, sizeof(p->reason),
				 "not decided within %u s (it expired)", ttl_s);
		} else if (withdrawn(arg)) {
			p->decided = 1 + APPROVAL_WITHDRAWN;
			snprintf(p->reason, sizeof(p->reason), "withdrawn before it was decided");
		}
	}
	unlink_pending(a, p);
	pthread_mutex_unlock(&a->lock);

	out = (enum approval_outcome)(p->decided - 1);
	snprintf(reason, reasonlen, "%s", p->reason);
	pthread_cond_destroy(&p->cond);
	json_decref(p->info);
	free(p->session);
	free(p);
	return out;
}

json_t *approvals_list(struct approvals *a)
{
	json_t *arr = json_array();
	struct pending *p;

	pthread_mutex_lock(&a->lock);
	for (p = a->head; p; p = p->next)
		if (!p->decided)
			json_array_append(arr, p->info);
	pthread_mutex_unlock(&a->lock);
	return arr;
}

int approvals_decide(struct approvals *a, const char *id, int approve, const char *reason,
		     char *err, size_t errlen)
{
	struct pending *p;

	pthread_mutex_lock(&a->lock);
	for (p = a->head; p && strcmp(p->id, id); p = p->next)
		;
	if (!p || p->decided) {
		pthread_mutex_unlock(&a->lock);
		snprintf(err, errlen, "no pending approval %s (decided, expired or unknown)", id);
		return -1;
	}
	p->decided = 1 + (approve ? APPROVAL_APPROVED : APPROVAL_DENIED);
	snprintf(p->reason, sizeof(p->reason), "%s",
		 reason && *reason ? reason
		 : approve	   ? "approved"
				   : "denied by a person");
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

void approvals_session_end(struct approvals *a, const char *session)
{
	struct pending *p;

	pthread_mutex_lock(&a->lock);
	for (p = a->head; p; p = p->next)
		if (!p->decided && !strcmp(p->session, session)) {
			p->decided = 1 + APPROVAL_DENIED;
			snprintf(p->reason, sizeof(p->reason), "the session ended");
			pthread_cond_signal(&p->cond);
		}
	pthread_mutex_unlock(&a->lock);
}
