/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop.h: the broker's connection loop. One thread accepts every session's guest
 * connections and keeps those that wait between requests, on io_uring or (where that is
 * missing or forbidden) epoll; a request being served has a worker thread of its own, from a
 * pool, until its connection falls silent again. The loop is where the bounds on connections
 * hold: how many are open in all and per session, a session's fair share when the broker is
 * full, and how long a connection may stay idle. Every connection it refuses or closes gets an
 * answer and a record (loop_client.note). */
#ifndef BULKHEAD_BROKER_LOOP_H
#define BULKHEAD_BROKER_LOOP_H

#include <stddef.h>

#include "broker/proxy.h"

enum loop_kind { LOOP_AUTO, LOOP_URING, LOOP_EPOLL };

struct loop_limits {
	unsigned max_total;   /* connections open at once, all sessions; 0: from RLIMIT_NOFILE */
	unsigned max_session; /* ... and per session */
	unsigned max_active;  /* a session's connections served at once (each holds a thread);
			       * its other readable ones wait their turn */
	unsigned max_active_total; /* ... all sessions' (beyond it, a session under its share
				    * still gets one); 0: from RLIMIT_NOFILE */
	int idle_timeout_ms;	   /* a connection silent between requests is closed after this */
	int wait_timeout_ms; /* one readable but waiting for a worker is answered 503 after this */
	int linger_ms; /* a worker keeps a silent connection this long before the loop takes it */
};

/* A session as the loop sees it: how to serve its connections and whom to tell. */
struct loop_client {
	const struct proxy_config *cfg;
	const char *id;
	void *arg;
	/* One audit record for a connection the loop refused or closed: STATUS, OUTCOME, and
	 * RULE, the bound that was reached ("limit:broker", "limit:session", ...). */
	void (*note)(void *arg, int status, const char *outcome, const char *rule);
	/* A second has passed since the last note: what NOTE only counted may be written now. */
	void (*flush)(void *arg);
	/* The loop holds nothing of the session any more (after loop_unlisten). */
	void (*release)(void *arg);
};

struct loop;
struct loop_session;

/* Makes the loop with KIND's backend (LOOP_AUTO: io_uring, else epoll), before the lock-down.
 * Returns NULL with one line in ERR. */
struct loop *loop_new(enum loop_kind kind, const struct loop_limits *lim, char *err, size_t errlen);
/* The backend LOOP_AUTO would run in this process: "io_uring", or "epoll" with why in WHY. */
const char *loop_probe(char *why, size_t whylen);
/* Which backend runs, and why not io_uring when it is epoll under LOOP_AUTO ("" otherwise). */
const char *loop_backend_name(const struct loop *l);
const char *loop_fallback_why(const struct loop *l);
/* The bounds in force: those given, lowered to what the descriptor limit allows. */
const struct loop_limits *loop_limits(const struct loop *l);
/* Starts the loop's thread. Returns 0 or a negative errno. */
int loop_start(struct loop *l);
/* Serves the listening socket LFD (the loop's from here on) for CL's session. NULL: out of
 * memory (LFD closed). */
struct loop_session *loop_listen(struct loop *l, int lfd, const struct loop_client *cl);
/* Stops accepting for the session and cuts its connections; CL->release follows once the last
 * one is gone. */
void loop_unlisten(struct loop_session *ls);

/* Whether a session holding MINE connections may open one more, with TOTAL open of MAX_TOTAL
 * in all, MAX_SESSION per session and SESSIONS sessions holding any (this one counted):
 * LOOP_ADMIT, LOOP_ADMIT_EVICT (only by closing an idle connection of a session over its
 * fair share), LOOP_REFUSE_SESSION (at its own limit) or LOOP_REFUSE_FULL. FAIR: the share. */
enum { LOOP_ADMIT, LOOP_ADMIT_EVICT, LOOP_REFUSE_SESSION, LOOP_REFUSE_FULL };
int loop_admit(unsigned mine, unsigned total, unsigned max_total, unsigned max_session,
	       unsigned sessions, unsigned *fair);

#endif
