/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_conn.c: the connection loop's connections and sessions at their simplest (loop.h):
 * answered and noted, counted, parked, closed and freed, and the loop thread woken. The other
 * loop files build on these; only the loop thread calls them, but loop_wake (any thread). */
#include "broker/loop_internal.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/audit.h"
#include "lib/mono.h"

/* --- answers and notes ------------------------------------------------------------------- */

/* The loop's own answer to a connection it will not serve, sent without waiting: a socket
 * that cannot take a few hundred bytes at once gets none. What the guest sent and the loop
 * never read is dropped first: a Unix socket closed with unread bytes resets its peer, whose
 * read may then fail before it has the answer. */
void loop_answer(int fd, int status, const char *why)
{
	char buf[700];
	int n = proxy_error_text(buf, sizeof(buf), status, why);

	proxy_drop_unread(fd);
	if (n > 0)
		(void)send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Recorded in the session's audit log, and said on the host (loop_say). */
void loop_note(struct loop_session *ls, int status, const char *outcome, const char *rule,
	       const char *why)
{
	ls->cl.note(ls->cl.arg, status, outcome, rule);
	ls->note_ms = mono_ms();
	loop_say(ls, why);
}

/* Said on the host at most once a second per session (with how many were not said since). */
void loop_say(struct loop_session *ls, const char *why)
{
	int64_t t = mono_ms();

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

void loop_uncount(struct lconn *c)
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

/* The end of a connection: its socket closed, its state wiped. */
void loop_destroy(struct lconn *c)
{
	struct loop_session *ls = c->ls;

	loop_uncount(c);
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
	if (c->pc) /* a stream the loop ended: its one record */
		proxy_conn_stream_end(c->pc, c->end_outcome ? c->end_outcome : AUDIT_OUTCOME_CUT);
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
void loop_destroy_last(struct lconn *c)
{
	struct loop_session *ls = c->ls;

	loop_destroy(c);
	loop_maybe_release(ls);
}

/* Waits for a parked connection's next byte. */
void loop_park(struct lconn *c)
{
	struct loop *l = c->ls->l;

	c->state = C_PARKED;
	c->since_ms = mono_ms();
	if (l->b->readable(l->b, c->fd, (uint64_t)(uintptr_t)c) < 0)
		loop_destroy(c);
}

/* Closes a parked connection: STATUS answered (0: none) and noted, its wait cancelled; it is
 * destroyed when the cancel's event comes. */
void loop_close_parked(struct lconn *c, int status, const char *outcome, const char *rule,
		       const char *why)
{
	struct loop *l = c->ls->l;

	if (status) {
		if (!c->pc) /* inside a tunnel's TLS a plain answer would be noise */
			loop_answer(c->fd, status, why);
		loop_note(c->ls, status, outcome, rule, why);
	}
	loop_uncount(c);
	c->state = C_CLOSING;
	if (l->b->cancel(l->b, c->fd, (uint64_t)(uintptr_t)c) < 0)
		shutdown(c->fd, SHUT_RDWR); /* its wait then ends by itself */
}

void loop_wake(struct loop *l)
{
	uint64_t one = 1;

	(void)!write(l->efd, &one, sizeof(one));
}

void loop_post_session(struct loop_session *ls, int listen, int end)
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
	loop_wake(l);
}

void loop_maybe_release(struct loop_session *ls)
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
