/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_admit.c: who gets a connection (loop.h). A new connection is admitted within the
 * broker's and its session's bounds; when the broker is full, a session under its fair share
 * takes one from the session furthest over its own (idle first, then waiting, streaming, busy);
 * out of descriptors, a spare one is given up to answer the refused connection. Every refusal
 * is answered 503 and noted. */
#include "broker/loop_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/audit.h"
#include "lib/mono.h"

int loop_admit(unsigned mine, unsigned total, unsigned max_total, unsigned max_session,
	       unsigned sessions, unsigned *fair)
{
	*fair = max_total / (sessions ? sessions : 1);
	if (!*fair)
		*fair = 1;
	if (mine >= max_session)
		return LOOP_REFUSE_SESSION;
	if (total < max_total)
		return LOOP_ADMIT;
	return mine < *fair ? LOOP_ADMIT_EVICT : LOOP_REFUSE_FULL;
}

/* Closes the oldest idle connection of the session furthest over its fair share, for NEEDY.
 * Returns 1 when one was closed. */
static int evict(struct loop *l, struct loop_session *needy, unsigned fair)
{
	static const int order[] = { C_PARKED, C_WAITING, C_STREAM, C_ACTIVE };
	struct loop_session *worst = NULL;
	struct lconn *victim = NULL;
	char why[240];

	/* The session furthest over its share; its oldest idle connection, else one waiting
	 * for a worker, else one being served: a session over its share when the broker is
	 * full may lose any of its connections, idle ones first. */
	for (struct loop_session *s = l->sessions; s; s = s->next)
		if (s != needy && !s->ended && s->count > fair &&
		    (!worst || s->count > worst->count))
			worst = s;
	for (size_t k = 0; worst && !victim && k < sizeof(order) / sizeof(order[0]); k++)
		for (struct lconn *c = worst->head; c && !victim; c = c->next)
			if (c->state == order[k] && c->counted)
				victim = c;
	if (!victim)
		return 0;
	snprintf(why, sizeof(why),
		 "the broker is full (%u connections): this %s connection was closed for "
		 "another session's; this session holds %u, its fair share is %u",
		 l->lim.max_total,
		 victim->state == C_PARKED    ? "idle"
		 : victim->state == C_WAITING ? "waiting"
		 : victim->state == C_STREAM  ? "streaming"
					      : "busy",
		 worst->count, fair);
	if (victim->state == C_STREAM) {
		/* Its own record says evicted: one record, no loop note beside it. */
		loop_say(worst, why);
		loop_stream_close(victim, 0, AUDIT_OUTCOME_EVICTED, "limit:fair_share", why);
	} else if (victim->state == C_PARKED) {
		loop_close_parked(victim, 503, AUDIT_OUTCOME_EVICTED, "limit:fair_share", why);
	} else if (victim->state == C_WAITING) {
		loop_answer(victim->fd, 503, why);
		loop_note(worst, 503, AUDIT_OUTCOME_EVICTED, "limit:fair_share", why);
		loop_destroy(victim);
	} else {
		/* Its worker owns the stream: the socket's reading side is shut under it, and the
		 * worker answers 503 why at the end of stream it reads, unless an answer began. A
		 * request in progress gets its one record from the proxy (outcome evicted); the
		 * loop notes the eviction only when none was (between requests: drain_inbox). A
		 * worker that has not let go within a second (a guest that does not read, a slow
		 * upstream) has the socket shut both ways. */
		loop_say(worst, why);
		loop_uncount(victim);
		victim->evicted = 1;
		victim->since_ms = mono_ms();
		snprintf(victim->cut.why, sizeof(victim->cut.why), "%s", why);
		victim->cut.outcome = AUDIT_OUTCOME_EVICTED;
		victim->cut.rule = "limit:fair_share";
		victim->cut.set = 1; /* after why and outcome: an atomic store publishes them */
		shutdown(victim->fd, SHUT_RD);
	}
	return 1;
}

/* A new connection on LS: admitted and parked, or answered 503 and closed. */
void loop_admit_conn(struct loop_session *ls, int fd)
{
	struct loop *l = ls->l;
	unsigned fair;
	int a = loop_admit(ls->count, l->total, l->lim.max_total, l->lim.max_session,
			   l->busy_sessions + !ls->count, &fair);
	char why[200];
	struct lconn *c;

	if (a == LOOP_ADMIT_EVICT && !evict(l, ls, fair))
		a = LOOP_REFUSE_FULL;
	if (a == LOOP_REFUSE_SESSION || a == LOOP_REFUSE_FULL) {
		if (a == LOOP_REFUSE_SESSION)
			snprintf(why, sizeof(why),
				 "connection refused: this session has %u open, its limit",
				 ls->count);
		else
			snprintf(why, sizeof(why),
				 "connection refused: the broker is full (%u connections); this "
				 "session holds %u, its fair share is %u",
				 l->lim.max_total, ls->count, fair);
		loop_answer(fd, 503, why);
		loop_note(ls, 503, AUDIT_OUTCOME_OVER_LIMIT,
			  a == LOOP_REFUSE_SESSION ? "limit:session" : "limit:broker", why);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		loop_answer(fd, 503, "connection refused: the broker is out of memory");
		loop_note(ls, 503, AUDIT_OUTCOME_OVER_LIMIT, "limit:memory",
			  "connection refused: out of memory");
		close(fd);
		return;
	}
	*c = (struct lconn){ .kind = IT_CONN,
			     .ls = ls,
			     .fd = fd,
			     .counted = 1,
			     .id = ls->next_id++,
			     .prev = ls->tail };
	if (ls->tail)
		ls->tail->next = c;
	else
		ls->head = c;
	ls->tail = c;
	if (!ls->count++)
		l->busy_sessions++;
	l->total++;
	loop_park(c);
}

/* Out of descriptors with a connection waiting: the spare one is given up for a moment so the
 * connection can be accepted, answered and closed rather than left to retry for ever. */
void loop_out_of_descriptors(struct loop_session *ls)
{
	struct loop *l = ls->l;
	const char *why = "connection refused: the broker is out of file descriptors";
	int fd;

	if (l->spare_fd >= 0)
		close(l->spare_fd);
	fd = accept4(ls->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		loop_answer(fd, 503, why);
		loop_note(ls, 503, AUDIT_OUTCOME_OVER_LIMIT, "limit:descriptors", why);
		close(fd);
	}
	l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (l->spare_fd < 0)
		ls->paused = 1; /* accept again at the next sweep */
}
