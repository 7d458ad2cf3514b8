/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop.c: the connection loop (see loop.h). One thread owns every descriptor it is
 * given: it accepts, admits or refuses (loop_admit.c), waits on idle connections
 * (loop_conn.c), hands readable ones to workers (loop_workers.c), and is the only one that
 * closes a connection's socket, so a number is never shut down after its reuse. A connection
 * is parked (the loop waits for its next byte, no thread), active (a worker serves it),
 * streaming (an answer or a WebSocket waits for its next message, no thread: loop_stream.c) or
 * closing (its wait is being cancelled). Workers hand a connection back through a queue the
 * loop drains when its eventfd is written. */
#include "broker/loop_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker/audit.h"
#include "lib/mono.h"

#define SWEEP_MS 250 /* how often idle deadlines are looked at */

static void listen_arm(struct loop_session *ls)
{
	struct loop *l = ls->l;

	if (ls->ended || ls->accepting || ls->paused)
		return;
	if (l->b->accept(l->b, ls->lfd, (uint64_t)(uintptr_t)ls) == 0)
		ls->accepting = 1;
	else
		ls->paused = 1;
}

static void on_accept(struct loop_session *ls, int res)
{
	ls->accepting = 0;
	if (ls->ended) {
		if (res >= 0)
			close(res);
		loop_maybe_release(ls);
		return;
	}
	if (res >= 0)
		loop_admit_conn(ls, res);
	else if (res == -EMFILE || res == -ENFILE)
		loop_out_of_descriptors(ls);
	else if (res != -ECANCELED && res != -ECONNABORTED && res != -EINTR && res != -EAGAIN)
		ls->paused = 1; /* an unexpected failure: try again at the next sweep, not now */
	listen_arm(ls);
}

static void on_readable(struct lconn *c, int res)
{
	if (c->state == C_CLOSING || res < 0) {
		loop_destroy_last(c);
		return;
	}
	if (c->ls->ended) {
		loop_destroy_last(c);
		return;
	}
	if ((res & (POLLHUP | POLLERR)) && !(res & POLLIN)) {
		loop_destroy_last(c); /* the guest closed a connection it was not using */
		return;
	}
	loop_serve_or_wait(c);
}

/* --- the inbox ----------------------------------------------------------------------------- */

static void session_end(struct loop_session *ls)
{
	struct loop *l = ls->l;
	struct lconn *c, *next;

	ls->ended = 1;
	if (ls->accepting)
		l->b->cancel(l->b, ls->lfd, (uint64_t)(uintptr_t)ls);
	for (c = ls->head; c; c = next) {
		next = c->next;
		if (c->state == C_PARKED)
			loop_close_parked(c, 0, NULL, NULL, NULL);
		else if (c->state == C_WAITING)
			loop_destroy(c);
		else if (c->state == C_ACTIVE) {
			/* Its worker returns soon; a request in progress is recorded cut. */
			snprintf(c->cut.why, sizeof(c->cut.why), "the session ended");
			c->cut.outcome = AUDIT_OUTCOME_CUT;
			c->cut.set = 1;
			shutdown(c->fd, SHUT_RDWR);
		}
		else if (c->state == C_STREAM || c->state == C_WAKING)
			loop_stream_close(c, 0, AUDIT_OUTCOME_CUT, NULL, NULL);
	}
	loop_maybe_release(ls);
}

static void drain_inbox(struct loop *l)
{
	struct lconn *c, *cn;
	struct loop_session *s, *todo = NULL;
	uint64_t v;

	(void)!read(l->efd, &v, sizeof(v));
	pthread_mutex_lock(&l->in_lock);
	c = l->in_conns;
	l->in_conns = NULL;
	for (s = l->in_sessions; s; s = s->qnext) {
		s->do_listen = s->want_listen;
		s->do_end = s->want_end;
		s->want_listen = s->want_end = s->queued = 0;
		s->pnext = todo;
		todo = s;
	}
	l->in_sessions = NULL;
	pthread_mutex_unlock(&l->in_lock);
	for (s = todo; s; s = todo) {
		todo = s->pnext;
		if (s->do_listen) {
			s->next = l->sessions;
			if (l->sessions)
				l->sessions->prev = s;
			l->sessions = s;
			listen_arm(s);
		}
		if (s->do_end)
			session_end(s);
	}
	for (; c; c = cn) {
		struct loop_session *ls = c->ls;

		cn = c->qnext;
		ls->active--;
		l->active_total--;
		if (c->msg == M_PARK && !ls->ended && !c->evicted)
			loop_park(c);
		else if (c->msg == M_STREAM && !ls->ended && !c->evicted)
			loop_stream_park(c);
		else {
			if (c->msg == M_STREAM)
				c->end_outcome =
					c->evicted ? AUDIT_OUTCOME_EVICTED : AUDIT_OUTCOME_CUT;
			/* Taken between requests (no record of the proxy's): the loop's record
			 * (its host line was said at the eviction). */
			if (c->evicted && !c->cut.recorded && c->msg != M_STREAM) {
				ls->cl.note(ls->cl.arg, 503, AUDIT_OUTCOME_EVICTED,
					    "limit:fair_share");
				ls->note_ms = mono_ms();
			}
			loop_destroy_last(c);
		}
	}
	loop_schedule(l);
}

/* A connection that waited its turn too long: its session's workers are all taken (by
 * requests it keeps going), so it is answered, not kept waiting for good. */
static void close_waiting(struct lconn *c)
{
	struct loop_session *ls = c->ls;
	char why[160];

	snprintf(why, sizeof(why),
		 "no worker for this request in %d s: this session has %u requests in progress, "
		 "its limit now",
		 ls->l->lim.wait_timeout_ms / 1000, ls->active);
	if (!c->pc)
		loop_answer(c->fd, 503, why);
	loop_note(ls, 503, AUDIT_OUTCOME_OVER_LIMIT, "limit:active", why);
	loop_destroy(c);
}

/* Idle and waiting deadlines, and listeners paused by a failure. */
static void sweep(struct loop *l, int64_t t)
{
	char why[120];

	snprintf(why, sizeof(why), "idle for %d s: connection closed",
		 l->lim.idle_timeout_ms / 1000);
	for (struct loop_session *s = l->sessions; s; s = s->next) {
		if (s->paused) {
			s->paused = 0;
			listen_arm(s);
		}
		if (s->note_ms && t - s->note_ms >= 1000) {
			s->cl.flush(s->cl.arg);
			s->note_ms = 0;
		}
		for (struct lconn *c = s->head, *n; c; c = n) {
			n = c->next;
			if (c->state == C_PARKED && t - c->since_ms >= l->lim.idle_timeout_ms)
				loop_close_parked(c, 408, AUDIT_OUTCOME_IDLE, "limit:idle", why);
			else if (c->state == C_WAITING && t - c->since_ms >= l->lim.wait_timeout_ms)
				close_waiting(c);
			else if (c->state == C_STREAM)
				loop_stream_sweep(c, t);
			else if (c->state == C_ACTIVE && c->evicted == 1 &&
				 t - c->since_ms >= 1000) {
				shutdown(c->fd, SHUT_RDWR);
				c->evicted = 2;
			}
		}
	}
}

void *loop_main(void *arg)
{
	struct loop *l = arg;
	struct loop_ev ev[128];

	int wait_ms = SWEEP_MS;

	l->b->readable(l->b, l->efd, (uint64_t)(uintptr_t)&l->wake_kind);
	for (;;) {
		int n = l->b->wait(l->b, ev, 128, wait_ms);
		int64_t t;

		if (n < 0) {
			fprintf(stderr, "bulkhead-broker: event loop (%s): %s\n", l->b->name,
				strerror(-n));
			usleep(100000);
			continue;
		}
		for (int i = 0; i < n; i++) {
			int *kind = (int *)(uintptr_t)ev[i].tag;

			if (*kind == IT_WAKE) {
				drain_inbox(l);
				l->b->readable(l->b, l->efd, ev[i].tag);
			} else if (*kind == IT_LISTENER)
				on_accept((struct loop_session *)kind, ev[i].res);
			else if (*kind == IT_UP)
				loop_stream_event(((struct ltag *)kind)->c, ev[i].res, 1);
			else if (((struct lconn *)kind)->streaming)
				loop_stream_event((struct lconn *)kind, ev[i].res, 0);
			else
				on_readable((struct lconn *)kind, ev[i].res);
		}
		pthread_mutex_lock(&l->wq_lock);
		loop_staff(l); /* paced: it may not have started one when work was queued */
		wait_ms = loop_staff_pending(l) ? LOOP_WORKER_PACE_MS : SWEEP_MS;
		pthread_mutex_unlock(&l->wq_lock);
		t = mono_ms();
		if (t - l->swept_ms >= SWEEP_MS) {
			sweep(l, t);
			l->swept_ms = t;
		}
	}
	return NULL;
}
