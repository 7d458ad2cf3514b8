/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_internal.h: the connection loop's state, shared by its files. Not an interface:
 * loop.h is. Everything here is the loop thread's own unless a field says it is under a lock. The
 * files are layers: loop_conn.c at the bottom, then loop_workers.c, loop_stream.c, loop_admit.c,
 * and loop.c (the events) on top; loop_new.c is the interface. */
#ifndef BULKHEAD_BROKER_LOOP_INTERNAL_H
#define BULKHEAD_BROKER_LOOP_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "broker/loop.h"
#include "broker/loop_backend.h"

enum { IT_WAKE, IT_LISTENER, IT_CONN, IT_UP }; /* what a tag points at */
/* A connection's state: parked (waits for its next request), waiting for a worker, active (a
 * worker serves it), closing (its waits are being cancelled), streaming (an answer or a
 * WebSocket waits for its next message, on both sides: loop_stream.c), waking (one of those
 * waits ended; the other is being cancelled). */
enum { C_PARKED, C_WAITING, C_ACTIVE, C_CLOSING, C_STREAM, C_WAKING };
enum { M_NONE, M_PARK, M_DONE, M_STREAM }; /* a worker's word about a connection */

struct lconn;
/* The tag of a parked stream's wait on its upstream socket. */
struct ltag {
	int kind; /* IT_UP */
	struct lconn *c;
};

struct lconn {
	int kind; /* IT_CONN; first, as in every tagged item */
	struct loop_session *ls;
	int fd, state, counted, msg;
	int evicted; /* cut while a worker had it (2: both ways): it ends when the worker lets go */
	struct proxy_cut cut; /* how the worker learns it was cut, and why */
	unsigned long id;
	struct conn *pc;  /* its proxy state while parked, when it has any (a tunnel's TLS) */
	int64_t since_ms; /* when it was parked, or began to wait for a worker */
	int linger_ms;	  /* its worker's linger this time (loop.c worker_main) */
	struct lconn *prev, *next; /* in its session's list, oldest first */
	struct lconn *qnext;	   /* in the work queue, the loop's inbox or its session's turn */
	/* A stream parked without a thread (loop_stream.c): its waits are on both sides. */
	int streaming;
	int g_armed, u_armed; /* the guest's socket's wait, the upstream's */
	int half;	      /* the guest shut its sending side: only the upstream is watched */
	int up_fd;
	int64_t due_ms;		 /* run it again by then (0: no bound) */
	const char *end_outcome; /* its record's outcome when the loop ends it */
	struct ltag up;
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
	int64_t started_ms; /* when the last worker started */
	/* The loop thread's own. */
	unsigned total, busy_sessions; /* open connections; sessions holding any */
	unsigned active_total;	       /* connections a worker serves, all sessions */
	struct loop_session *sessions;
	int64_t swept_ms;
};

/* loop_conn.c: connections and sessions at their simplest. */
/* The loop's answer to a connection it will not serve, sent without waiting. */
void loop_answer(int fd, int status, const char *why);
/* One audit record for a connection the loop refused or closed, and a host line (loop_say). */
void loop_note(struct loop_session *ls, int status, const char *outcome, const char *rule,
	       const char *why);
/* The host line alone: at most one a second per session, with how many were not said since. */
void loop_say(struct loop_session *ls, const char *why);
void loop_uncount(struct lconn *c);
/* C's socket closed and its state freed (a stream's record written) ... */
void loop_destroy(struct lconn *c);
/* ... and then its session when that was the last of an ended one. */
void loop_destroy_last(struct lconn *c);
/* An ended session with nothing left is let go of (its owner told). */
void loop_maybe_release(struct loop_session *ls);
/* C waits for its next byte with no thread (C_PARKED). */
void loop_park(struct lconn *c);
/* A parked connection closed: STATUS answered (0: none) and noted; destroyed when its wait's
 * cancel comes back. */
void loop_close_parked(struct lconn *c, int status, const char *outcome, const char *rule,
		       const char *why);
/* Wakes the loop thread: its inbox has something (any thread). */
void loop_wake(struct loop *l);
/* LS's owner asks to start listening (LISTEN) or to end it (END), through the inbox. */
void loop_post_session(struct loop_session *ls, int listen, int end);

/* loop_workers.c: the pool and the turns. */
/* C goes to a worker (C_ACTIVE). */
void loop_activate(struct lconn *c);
/* Under wq_lock: starts a worker when queued connections need one (paced: beyond the first
 * few, one every LOOP_WORKER_PACE_MS). 1 when started. */
#define LOOP_WORKER_PACE_MS 2
int loop_staff(struct loop *l);
/* Under wq_lock: queued connections still want a worker (the loop looks again in
 * LOOP_WORKER_PACE_MS, not at its next sweep). */
int loop_staff_pending(const struct loop *l);
/* A worker hands C back with its word (M_*). */
void loop_post_conn(struct lconn *c, int msg);
/* C has bytes: a worker serves it, or it waits its session's turn. */
void loop_serve_or_wait(struct lconn *c);
/* Workers were let go of: connections waiting their turn take their places. */
void loop_schedule(struct loop *l);

/* loop_stream.c: streams waiting between their messages. */
/* A worker's stream (M_STREAM): waits on both its sides. */
void loop_stream_park(struct lconn *c);
/* One of a parked stream's waits ended with RES (UP: the upstream's). */
void loop_stream_event(struct lconn *c, int res, int up);
/* A parked stream is ended by the loop: STATUS noted (0: none), its record's OUTCOME. */
void loop_stream_close(struct lconn *c, int status, const char *outcome, const char *rule,
		       const char *why);
/* Its deadline, at the sweep at T: past it, a worker runs it (and ends it). */
void loop_stream_sweep(struct lconn *c, int64_t t);

/* loop_admit.c: who gets a connection. */
/* A new connection FD on LS: admitted and parked, or answered 503 and closed. */
void loop_admit_conn(struct loop_session *ls, int fd);
/* Out of descriptors with a connection waiting: it is accepted, answered and closed. */
void loop_out_of_descriptors(struct loop_session *ls);

/* loop.c: the loop thread's body (loop_start). */
void *loop_main(void *arg);

#endif
