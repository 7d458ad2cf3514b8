/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop.c: the connection loop (see loop.h). One thread owns every descriptor it is
 * given: it accepts, admits or refuses, waits on idle connections, and is the only one that
 * closes a connection's socket, so a number is never shut down after its reuse. A connection
 * is in one of three states: parked (the loop waits for its next byte, no thread), active (a
 * worker serves it) or closing (its wait is being cancelled). Workers hand a connection back
 * through a queue the loop drains when its eventfd is written. */
#include "broker/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker/audit.h"
#include "broker/loop_backend.h"
#include "lib/mono_ms.h"

#define DEFAULT_TOTAL_MAX 32768 /* open connections, when the descriptor limit allows more */
#define WORKER_IDLE_S	  30	/* a worker with nothing to do for this long ends */
#define WORKER_STACK	  (256 << 10)
#define SWEEP_MS	  250 /* how often idle deadlines are looked at */

enum { IT_WAKE, IT_LISTENER, IT_CONN };		   /* what a tag points at */
enum { C_PARKED, C_WAITING, C_ACTIVE, C_CLOSING }; /* a connection's state */
enum { M_NONE, M_PARK, M_DONE };		   /* a worker's word about a connection */

struct lconn {
	int kind; /* IT_CONN; first, as in every tagged item */
	struct loop_session *ls;
	int fd, state, counted, msg;
	int evicted; /* cut while a worker had it (2: both ways): it ends when the worker lets go */
	struct proxy_cut cut; /* how the worker learns it was cut, and why */
	unsigned long id;
	struct conn *pc;  /* its proxy state while parked, when it has any (a tunnel's TLS) */
	int64_t since_ms; /* when it was parked, or began to wait for a worker */
	struct lconn *prev, *next; /* in its session's list, oldest first */
	struct lconn *qnext;	   /* in the work queue, the loop's inbox or its session's turn */
};

struct loop_session {
	int kind; /* IT_LISTENER */
	struct loop *l;
	struct loop_client cl;
	int lfd, accepting, ended, paused;
	unsigned count;			/* connections open, closing ones not counted */
	unsigned active;		/* ... of which a worker serves */
	struct lconn *turn, *turn_tail; /* readable ones waiting for a worker (C_WAITING) */
	_Atomic unsigned waiting;	/* how many: its workers yield between requests */
	unsigned long next_id;
	struct lconn *head, *tail;
	int64_t log_ms;	 /* the last host log line (one a second at most) */
	int64_t note_ms; /* the last note; 0 once flushed */
	unsigned log_quiet;
	int want_listen, want_end, queued; /* its messages in the inbox */
	int do_listen, do_end;		   /* ... taken out of it */
	struct loop_session *qnext, *pnext, *prev, *next;
};

struct loop {
	int wake_kind; /* IT_WAKE: the tag of the eventfd's wait */
	struct loop_backend *b;
	char fallback_why[160];
	struct loop_limits lim;
	int efd, spare_fd;
	pthread_t thread;
	/* The inbox: what workers and the sessions' owners tell the loop. */
	pthread_mutex_t in_lock;
	struct lconn *in_conns;
	struct loop_session *in_sessions;
	/* The work queue and its workers. */
	pthread_mutex_t wq_lock;
	pthread_cond_t wq_cond;
	struct lconn *wq_head, *wq_tail;
	unsigned wq_len, idle_workers, workers;
	/* The loop thread's own. */
	unsigned total, busy_sessions; /* open connections; sessions holding any */
	unsigned active_total;	       /* connections a worker serves, all sessions */
	struct loop_session *sessions;
	int64_t swept_ms;
};

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

/* --- answers and notes ------------------------------------------------------------------- */

/* The loop's own answer to a connection it will not serve, sent without waiting: a socket
 * that cannot take a few hundred bytes at once gets none. What the guest sent and the loop
 * never read is dropped first: a Unix socket closed with unread bytes resets its peer, whose
 * read may then fail before it has the answer. */
static void answer(int fd, int status, const char *why)
{
	char buf[700];
	int n = proxy_error_text(buf, sizeof(buf), status, why);

	proxy_drop_unread(fd);
	if (n > 0)
		(void)send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Recorded in the session's audit log, and said on the host at most once a second per
 * session (with how many were not said since). */
static void note(struct loop_session *ls, int status, const char *outcome, const char *rule,
		 const char *why)
{
	int64_t t = mono_ms();

	ls->cl.note(ls->cl.arg, status, outcome, rule);
	ls->note_ms = t;
	if (t - ls->log_ms < 1000) {
		ls->log_quiet++;
		return;
	}
	if (ls->log_quiet)
		fprintf(stderr,
			"bulkhead-broker: session %s: %s (and %u more since the last line)\n",
			ls->cl.id, why, ls->log_quiet);
	else
		fprintf(stderr, "bulkhead-broker: session %s: %s\n", ls->cl.id, why);
	ls->log_ms = t;
	ls->log_quiet = 0;
}

/* --- connections ------------------------------------------------------------------------- */

static void uncount(struct lconn *c)
{
	struct loop *l = c->ls->l;

	if (!c->counted)
		return;
	c->counted = 0;
	c->ls->count--;
	l->total--;
	if (!c->ls->count)
		l->busy_sessions--;
}

static void maybe_release(struct loop_session *ls);

/* The end of a connection: its socket closed, its state wiped. */
static void destroy(struct lconn *c)
{
	struct loop_session *ls = c->ls;

	uncount(c);
	if (c->state == C_WAITING) {
		struct lconn **p = &ls->turn;

		ls->waiting--;
		while (*p != c)
			p = &(*p)->qnext;
		*p = c->qnext;
		if (ls->turn_tail == c)
			for (ls->turn_tail = ls->turn; ls->turn_tail && ls->turn_tail->qnext;)
				ls->turn_tail = ls->turn_tail->qnext;
	}
	proxy_conn_free(c->pc);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		ls->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		ls->tail = c->prev;
	free(c);
}

/* ... and the session let go of when that was the last of an ended one. */
static void destroy_last(struct lconn *c)
{
	struct loop_session *ls = c->ls;

	destroy(c);
	maybe_release(ls);
}

/* Waits for a parked connection's next byte. */
static void park(struct lconn *c)
{
	struct loop *l = c->ls->l;

	c->state = C_PARKED;
	c->since_ms = mono_ms();
	if (l->b->readable(l->b, c->fd, (uint64_t)(uintptr_t)c) < 0)
		destroy(c);
}

/* Closes a parked connection: STATUS answered (0: none) and noted, its wait cancelled; it is
 * destroyed when the cancel's event comes. */
static void close_parked(struct lconn *c, int status, const char *outcome, const char *rule,
			 const char *why)
{
	struct loop *l = c->ls->l;

	if (status) {
		if (!c->pc) /* inside a tunnel's TLS a plain answer would be noise */
			answer(c->fd, status, why);
		note(c->ls, status, outcome, rule, why);
	}
	uncount(c);
	c->state = C_CLOSING;
	if (l->b->cancel(l->b, c->fd, (uint64_t)(uintptr_t)c) < 0)
		shutdown(c->fd, SHUT_RDWR); /* its wait then ends by itself */
}

static void *worker_main(void *arg);

/* Hands an active connection to a worker, starting one when none is free and every worker
 * has a connection of its own. A worker that has let go of one (its word is in the inbox, or
 * already read) and is on its way back to the queue counts as free: without that, work
 * changing hands started threads beyond the connections served at once. */
static void activate(struct lconn *c)
{
	struct loop *l = c->ls->l;
	pthread_attr_t attr;
	pthread_t t;
	int spawn;

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
	spawn = l->wq_len > l->idle_workers && l->workers < l->active_total;
	if (!spawn)
		pthread_cond_signal(&l->wq_cond);
	else {
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, WORKER_STACK);
		if (!pthread_create(&t, &attr, worker_main, l))
			l->workers++;
		else if (!l->workers)
			fprintf(stderr,
				"bulkhead-broker: cannot start a worker thread; connections "
				"wait until one can start\n");
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&l->wq_lock);
}

/* Closes the oldest idle connection of the session furthest over its fair share, for NEEDY.
 * Returns 1 when one was closed. */
static int evict(struct loop *l, struct loop_session *needy, unsigned fair)
{
	static const int order[] = { C_PARKED, C_WAITING, C_ACTIVE };
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
					      : "busy",
		 worst->count, fair);
	if (victim->state == C_PARKED) {
		close_parked(victim, 503, AUDIT_OUTCOME_EVICTED, "limit:fair_share", why);
	} else if (victim->state == C_WAITING) {
		answer(victim->fd, 503, why);
		note(worst, 503, AUDIT_OUTCOME_EVICTED, "limit:fair_share", why);
		destroy(victim);
	} else {
		/* Its worker owns the stream: the socket's reading side is shut under it, and the
		 * worker answers 503 why at the end of stream it reads, unless an answer began (the
		 * proxy records the request). A worker that has not let go within a second (a
		 * guest that does not read, a slow upstream) has the socket shut both ways. */
		note(worst, 503, AUDIT_OUTCOME_EVICTED, "limit:fair_share", why);
		uncount(victim);
		victim->evicted = 1;
		victim->since_ms = mono_ms();
		snprintf(victim->cut.why, sizeof(victim->cut.why), "%s", why);
		victim->cut.set = 1; /* after why: an atomic store publishes it */
		shutdown(victim->fd, SHUT_RD);
	}
	return 1;
}

/* A new connection on LS: admitted and parked, or answered 503 and closed. */
static void admit(struct loop_session *ls, int fd)
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
		answer(fd, 503, why);
		note(ls, 503, AUDIT_OUTCOME_OVER_LIMIT,
		     a == LOOP_REFUSE_SESSION ? "limit:session" : "limit:broker", why);
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		answer(fd, 503, "connection refused: the broker is out of memory");
		note(ls, 503, AUDIT_OUTCOME_OVER_LIMIT, "limit:memory",
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
	park(c);
}

/* Out of descriptors with a connection waiting: the spare one is given up for a moment so the
 * connection can be accepted, answered and closed rather than left to retry for ever. */
static void out_of_descriptors(struct loop_session *ls)
{
	struct loop *l = ls->l;
	const char *why = "connection refused: the broker is out of file descriptors";
	int fd;

	if (l->spare_fd >= 0)
		close(l->spare_fd);
	fd = accept4(ls->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		answer(fd, 503, why);
		note(ls, 503, AUDIT_OUTCOME_OVER_LIMIT, "limit:descriptors", why);
		close(fd);
	}
	l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (l->spare_fd < 0)
		ls->paused = 1; /* accept again at the next sweep */
}

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
		maybe_release(ls);
		return;
	}
	if (res >= 0)
		admit(ls, res);
	else if (res == -EMFILE || res == -ENFILE)
		out_of_descriptors(ls);
	else if (res != -ECANCELED && res != -ECONNABORTED && res != -EINTR && res != -EAGAIN)
		ls->paused = 1; /* an unexpected failure: try again at the next sweep, not now */
	listen_arm(ls);
}

/* Whether one more of LS's connections may have a worker: within its own --max-active, and
 * within the broker's bound on workers unless the session is under its share of them. */
static int may_serve(const struct loop_session *ls)
{
	const struct loop *l = ls->l;
	unsigned share = l->lim.max_active_total / (l->busy_sessions ? l->busy_sessions : 1);

	return ls->active < l->lim.max_active &&
	       (l->active_total < l->lim.max_active_total || ls->active < (share ? share : 1));
}

static void on_readable(struct lconn *c, int res)
{
	if (c->state == C_CLOSING || res < 0) {
		destroy_last(c);
		return;
	}
	if (c->ls->ended) {
		destroy_last(c);
		return;
	}
	if ((res & (POLLHUP | POLLERR)) && !(res & POLLIN)) {
		destroy_last(c); /* the guest closed a connection it was not using */
		return;
	}
	if (may_serve(c->ls)) {
		activate(c);
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
static void schedule(struct loop *l)
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
			activate(c);
			progress = 1;
		}
	}
}

/* --- the inbox ----------------------------------------------------------------------------- */

static void wake(struct loop *l)
{
	uint64_t one = 1;

	(void)!write(l->efd, &one, sizeof(one));
}

static void post_conn(struct lconn *c, int msg)
{
	struct loop *l = c->ls->l;

	pthread_mutex_lock(&l->in_lock);
	c->msg = msg;
	c->qnext = l->in_conns;
	l->in_conns = c;
	pthread_mutex_unlock(&l->in_lock);
	wake(l);
}

static void post_session(struct loop_session *ls, int listen, int end)
{
	struct loop *l = ls->l;

	pthread_mutex_lock(&l->in_lock);
	ls->want_listen |= listen;
	ls->want_end |= end;
	if (!ls->queued) {
		ls->queued = 1;
		ls->qnext = l->in_sessions;
		l->in_sessions = ls;
	}
	pthread_mutex_unlock(&l->in_lock);
	wake(l);
}

static void maybe_release(struct loop_session *ls)
{
	struct loop *l = ls->l;

	if (!ls->ended || ls->accepting || ls->head)
		return;
	if (ls->lfd >= 0)
		close(ls->lfd);
	ls->lfd = -1;
	if (ls->prev)
		ls->prev->next = ls->next;
	else if (l->sessions == ls)
		l->sessions = ls->next;
	if (ls->next)
		ls->next->prev = ls->prev;
	ls->cl.release(ls->cl.arg);
	free(ls);
}

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
			close_parked(c, 0, NULL, NULL, NULL);
		else if (c->state == C_WAITING)
			destroy(c);
		else if (c->state == C_ACTIVE)
			shutdown(c->fd, SHUT_RDWR); /* its worker returns soon */
	}
	maybe_release(ls);
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
			park(c);
		else
			destroy_last(c);
	}
	schedule(l);
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
		answer(c->fd, 503, why);
	note(ls, 503, AUDIT_OUTCOME_OVER_LIMIT, "limit:active", why);
	destroy(c);
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
				close_parked(c, 408, AUDIT_OUTCOME_IDLE, "limit:idle", why);
			else if (c->state == C_WAITING && t - c->since_ms >= l->lim.wait_timeout_ms)
				close_waiting(c);
			else if (c->state == C_ACTIVE && c->evicted == 1 &&
				 t - c->since_ms >= 1000) {
				shutdown(c->fd, SHUT_RDWR);
				c->evicted = 2;
			}
		}
	}
}

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	struct loop_ev ev[128];

	l->b->readable(l->b, l->efd, (uint64_t)(uintptr_t)&l->wake_kind);
	for (;;) {
		int n = l->b->wait(l->b, ev, 128, SWEEP_MS);
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
			else
				on_readable((struct lconn *)kind, ev[i].res);
		}
		t = mono_ms();
		if (t - l->swept_ms >= SWEEP_MS) {
			sweep(l, t);
			l->swept_ms = t;
		}
	}
	return NULL;
}

/* --- workers ------------------------------------------------------------------------------- */

static void serve(struct lconn *c)
{
	const struct proxy_config *cfg = c->ls->cl.cfg;
	int r = PROXY_DONE;

	if (!c->pc)
		c->pc = proxy_conn_new(cfg, c->fd, c->id);
	if (c->pc)
		r = proxy_conn_serve(c->pc, c->ls->l->lim.linger_ms, &c->ls->waiting, &c->cut);
	if (r == PROXY_DONE || proxy_conn_stateless(c->pc)) {
		proxy_conn_free(c->pc);
		c->pc = NULL;
	}
	post_conn(c, r == PROXY_IDLE ? M_PARK : M_DONE);
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

			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += WORKER_IDLE_S;
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
		pthread_mutex_unlock(&l->wq_lock);
		serve(c);
		pthread_mutex_lock(&l->wq_lock);
	}
}

/* --- the interface ------------------------------------------------------------------------- */

/* What the descriptor limit allows. A connection holds one descriptor; one being served a
 * second (its upstream's), and TLS or a name lookup may briefly take a third: of the limit
 * less 256 for the broker's own files, a sixth (at most 1024) is the bound on connections
 * served at once in all, and what is left after twice that the bound on connections open. */
static void limits_from_nofile(struct loop_limits *lim)
{
	struct rlimit rl;
	unsigned long f = 2 * DEFAULT_TOTAL_MAX, a, t;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		f = rl.rlim_cur > 512 ? rl.rlim_cur - 256 : rl.rlim_cur / 2;
	a = f / 6 > 1024 ? 1024 : f / 6 ? f / 6 : 1;
	t = f > 2 * a ? f - 2 * a : 1;
	if (t > DEFAULT_TOTAL_MAX)
		t = DEFAULT_TOTAL_MAX;
	if (!lim->max_total || lim->max_total > t)
		lim->max_total = (unsigned)t;
	if (!lim->max_active_total || lim->max_active_total > a)
		lim->max_active_total = (unsigned)a;
}

struct loop *loop_new(enum loop_kind kind, const struct loop_limits *lim, char *err, size_t errlen)
{
	struct loop *l = calloc(1, sizeof(*l));
	pthread_condattr_t ca;
	int rc = -ENOSYS;

	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->wake_kind = IT_WAKE;
	l->lim = *lim;
	limits_from_nofile(&l->lim);
	if (kind != LOOP_EPOLL)
		rc = loop_uring_new(&l->b, l->fallback_why, sizeof(l->fallback_why));
	if (rc < 0 && kind == LOOP_URING) {
		snprintf(err, errlen, "event loop: %s", l->fallback_why);
		free(l);
		return NULL;
	}
	if (rc < 0 && kind == LOOP_EPOLL)
		l->fallback_why[0] = '\0'; /* asked for */
	if (rc < 0 && loop_epoll_new(&l->b, err, errlen) < 0) {
		free(l);
		return NULL;
	}
	l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (l->efd < 0 || l->spare_fd < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(errno));
		l->b->free(l->b);
		free(l);
		return NULL;
	}
	pthread_mutex_init(&l->in_lock, NULL);
	pthread_mutex_init(&l->wq_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wq_cond, &ca);
	pthread_condattr_destroy(&ca);
	return l;
}

const char *loop_backend_name(const struct loop *l)
{
	return l->b->name;
}

const char *loop_fallback_why(const struct loop *l)
{
	return l->fallback_why;
}

const struct loop_limits *loop_limits(const struct loop *l)
{
	return &l->lim;
}

int loop_start(struct loop *l)
{
	return -pthread_create(&l->thread, NULL, loop_main, l);
}

struct loop_session *loop_listen(struct loop *l, int lfd, const struct loop_client *cl)
{
	struct loop_session *ls = calloc(1, sizeof(*ls));
	int fl = fcntl(lfd, F_GETFL);

	if (!ls || fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) < 0) {
		free(ls);
		close(lfd);
		return NULL;
	}
	*ls = (struct loop_session){
		.kind = IT_LISTENER, .l = l, .cl = *cl, .lfd = lfd, .next_id = 1
	};
	post_session(ls, 1, 0);
	return ls;
}

void loop_unlisten(struct loop_session *ls)
{
	post_session(ls, 0, 1);
}
