/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_workers.c: the connection loop's workers (loop.h). A readable connection is queued
 * for a worker from a pool that grows while connections wait and shrinks when idle; the worker
 * runs the proxy on it (proxy_conn_serve) and gives it back to the loop with a word: park it
 * (idle between requests), stream it (quiet between a stream's messages: loop_stream.c) or
 * done. */
#include "broker/loop_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "lib/mono.h"

#define WORKER_IDLE_S  30 /* a worker with nothing to do for this long ends ... */
#define WORKER_SPARE_S 1  /* ... or this long, beyond the first WORKER_KEEP (a burst's) */
#define WORKER_KEEP    8
#define WORKER_STACK   (256 << 10)

static void *worker_main(void *arg);

/* Under wq_lock: a worker is started when more connections are queued than workers are idle,
 * and fewer workers run than connections are served. Beyond the first WORKER_KEEP, at most one
 * starts every LOOP_WORKER_PACE_MS (the loop looks again that soon: loop_staff_pending): a
 * burst that wakes a thousand streams at once, each a moment's work, is served by the workers
 * it has, while requests that keep their workers waiting (on a slow upstream, a trickled head)
 * still get new ones within milliseconds. 1 when one started. */
int loop_staff_pending(const struct loop *l)
{
	return l->wq_len > l->idle_workers && l->workers < l->active_total;
}

int loop_staff(struct loop *l)
{
	pthread_attr_t attr;
	pthread_t t;
	int64_t now;
	int started = 0;

	if (!loop_staff_pending(l))
		return 0;
	now = mono_ms();
	if (l->workers >= WORKER_KEEP && now - l->started_ms < LOOP_WORKER_PACE_MS)
		return 0;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, WORKER_STACK);
	if (!pthread_create(&t, &attr, worker_main, l)) {
		l->workers++;
		l->started_ms = now;
		started = 1;
	} else if (!l->workers) {
		fprintf(stderr, "bulkhead-broker: cannot start a worker thread; connections "
				"wait until one can start\n");
	}
	pthread_attr_destroy(&attr);
	return started;
}

/* Hands an active connection to a worker, starting one when none is free and every worker
 * has a connection of its own. A worker that has let go of one (its word is in the inbox, or
 * already read) and is on its way back to the queue counts as free: without that, work
 * changing hands started threads beyond the connections served at once. */
void loop_activate(struct lconn *c)
{
	struct loop *l = c->ls->l;

	c->state = C_ACTIVE;
	c->ls->active++;
	l->active_total++;
	pthread_mutex_lock(&l->wq_lock);
	c->qnext = NULL;
	if (l->wq_tail)
		l->wq_tail->qnext = c;
	else
		l->wq_head = c;
	l->wq_tail = c;
	l->wq_len++;
	if (!loop_staff(l))
		pthread_cond_signal(&l->wq_cond);
	pthread_mutex_unlock(&l->wq_lock);
}

/* --- workers ------------------------------------------------------------------------------- */

static void serve(struct lconn *c)
{
	const struct proxy_config *cfg = c->ls->cl.cfg;
	int r = PROXY_DONE;

	if (!c->pc)
		c->pc = proxy_conn_new(cfg, c->fd, c->id);
	if (c->pc)
		r = proxy_conn_serve(c->pc, c->linger_ms, &c->ls->waiting, &c->cut);
	if (r == PROXY_DONE || (r == PROXY_IDLE && proxy_conn_stateless(c->pc))) {
		proxy_conn_free(c->pc);
		c->pc = NULL;
	}
	loop_post_conn(c, r == PROXY_IDLE ? M_PARK : r == PROXY_STREAM ? M_STREAM : M_DONE);
}

static void *worker_main(void *arg)
{
	struct loop *l = arg;

	pthread_mutex_lock(&l->wq_lock);
	for (;;) {
		struct lconn *c;

		while (!l->wq_head) {
			struct timespec until;
			int rc;

			until = mono_deadline(
				1000 * (l->workers > WORKER_KEEP ? WORKER_SPARE_S : WORKER_IDLE_S));
			l->idle_workers++;
			rc = pthread_cond_timedwait(&l->wq_cond, &l->wq_lock, &until);
			l->idle_workers--;
			if (rc == ETIMEDOUT && !l->wq_head) {
				l->workers--;
				pthread_mutex_unlock(&l->wq_lock);
				return NULL;
			}
		}
		c = l->wq_head;
		l->wq_head = c->qnext;
		if (!l->wq_head)
			l->wq_tail = NULL;
		l->wq_len--;
		/* With others queued behind it, a connection gone quiet is handed back at once:
		 * lingering would keep them waiting (a burst that wakes many streams at once). */
		c->linger_ms = l->wq_len ? 0 : l->lim.linger_ms;
		pthread_mutex_unlock(&l->wq_lock);
		serve(c);
		pthread_mutex_lock(&l->wq_lock);
	}
}

void loop_post_conn(struct lconn *c, int msg)
{
	struct loop *l = c->ls->l;

	pthread_mutex_lock(&l->in_lock);
	c->msg = msg;
	c->qnext = l->in_conns;
	l->in_conns = c;
	pthread_mutex_unlock(&l->in_lock);
	loop_wake(l);
}

/* --- turns --------------------------------------------------------------------------------- */

/* Whether one more of LS's connections may have a worker: within its own --max-active, and
 * within the broker's bound on workers unless the session is under its share of them. */
static int may_serve(const struct loop_session *ls)
{
	const struct loop *l = ls->l;
	unsigned share = l->lim.max_active_total / (l->busy_sessions ? l->busy_sessions : 1);

	return ls->active < l->lim.max_active &&
	       (l->active_total < l->lim.max_active_total || ls->active < (share ? share : 1));
}

void loop_serve_or_wait(struct lconn *c)
{
	if (may_serve(c->ls)) {
		loop_activate(c);
		return;
	}
	/* No worker for it now: it waits its turn, so a session that keeps many connections
	 * busy takes more time, never more threads. */
	c->state = C_WAITING;
	c->since_ms = mono_ms();
	c->ls->waiting++;
	c->qnext = NULL;
	if (c->ls->turn_tail)
		c->ls->turn_tail->qnext = c;
	else
		c->ls->turn = c;
	c->ls->turn_tail = c;
}

/* Workers were let go of: connections waiting their turn take their places, one per session
 * in each round, so no session's second turn comes before another's first. */
void loop_schedule(struct loop *l)
{
	int progress = 1;

	while (progress) {
		progress = 0;
		for (struct loop_session *s = l->sessions; s; s = s->next) {
			struct lconn *c = s->turn;

			if (!c || s->ended || !may_serve(s))
				continue;
			s->turn = c->qnext;
			if (!s->turn)
				s->turn_tail = NULL;
			s->waiting--;
			loop_activate(c);
			progress = 1;
		}
	}
}
