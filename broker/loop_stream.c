/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_stream.c: streams that wait without a thread. An answer that streams (Server-Sent
 * Events, NDJSON, gRPC) or a WebSocket may stay open for hours and move a few bytes now and
 * then; once both its sides have been quiet for the worker's linger, the worker hands it back
 * (proxy.h PROXY_STREAM) and the loop waits on both sockets: the upstream's for bytes, the
 * guest's for bytes (a WebSocket) or its hang-up (an answer: the guest sends nothing while it
 * reads one). The first wait to end, or the stream's deadline, wakes it; the other wait is
 * cancelled, and once both events are back a worker runs it on like any readable connection.
 * A stream the loop ends itself (its session's end, an eviction) gets its one audit record. */
#include "broker/loop_internal.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "broker/audit.h"

/* Cancels what the stream still waits on: each wait's event comes back (-ECANCELED, or what it
 * got first) before the connection is touched again. */
static void cancel_waits(struct lconn *c)
{
	struct loop_backend *b = c->ls->l->b;

	if (c->g_armed && b->cancel(b, c->fd, (uint64_t)(uintptr_t)c) < 0)
		shutdown(c->fd, SHUT_RDWR); /* its wait then ends by itself */
	if (c->u_armed && b->cancel(b, c->up_fd, (uint64_t)(uintptr_t)&c->up) < 0)
		shutdown(c->up_fd, SHUT_RDWR);
}

static int waits(const struct lconn *c)
{
	return c->g_armed + c->u_armed;
}

void loop_stream_park(struct lconn *c)
{
	struct loop_backend *b = c->ls->l->b;
	int guest_reads = 0;

	c->streaming = 1;
	c->state = C_STREAM;
	c->g_armed = c->u_armed = 0;
	c->up = (struct ltag){ .kind = IT_UP, .c = c };
	if (!proxy_conn_stream(c->pc, &c->up_fd, &guest_reads, &c->due_ms) || c->up_fd < 0) {
		c->streaming = 0;
		loop_destroy_last(c);
		return;
	}
	if (guest_reads || !c->half) {
		int rc = guest_reads ? b->readable(b, c->fd, (uint64_t)(uintptr_t)c)
				     : b->hangup(b, c->fd, (uint64_t)(uintptr_t)c);

		c->g_armed = rc == 0;
	}
	c->u_armed = b->readable(b, c->up_fd, (uint64_t)(uintptr_t)&c->up) == 0;
	if (!c->u_armed || (!c->g_armed && (guest_reads || !c->half))) {
		/* A wait could not be made: the stream ends, once what was made is cancelled. */
		c->end_outcome = AUDIT_OUTCOME_CUT;
		loop_uncount(c);
		c->state = C_CLOSING;
		cancel_waits(c);
		if (!waits(c)) {
			c->streaming = 0;
			loop_destroy_last(c);
		}
	}
}

/* Both waits are back: a worker runs the stream on (or it waits its session's turn). */
static void wake(struct lconn *c)
{
	c->streaming = 0;
	loop_serve_or_wait(c);
}

void loop_stream_event(struct lconn *c, int res, int up)
{
	if (up)
		c->u_armed = 0;
	else
		c->g_armed = 0;
	switch (c->state) {
	case C_CLOSING:
		if (!waits(c)) {
			c->streaming = 0;
			loop_destroy_last(c);
		}
		return;
	case C_STREAM:
		/* The guest shut only its sending side (io_uring reports that to a wait for the
		 * hang-up): it still reads the answer, which goes on; only the upstream is
		 * watched from here on. */
		if (!up && res >= 0 && (res & POLLRDHUP) && !(res & (POLLHUP | POLLERR | POLLIN)) &&
		    c->u_armed) {
			c->half = 1;
			return;
		}
		c->state = C_WAKING;
		cancel_waits(c);
		break;
	default:
		break;
	}
	if (c->state == C_WAKING && !waits(c))
		wake(c);
}

void loop_stream_close(struct lconn *c, int status, const char *outcome, const char *rule,
		       const char *why)
{
	if (status)
		loop_note(c->ls, status, outcome, rule, why);
	c->end_outcome = outcome;
	loop_uncount(c);
	if (c->state == C_STREAM)
		cancel_waits(c);
	c->state = C_CLOSING; /* destroyed, with its record, once its waits are back */
	if (!waits(c)) {
		c->streaming = 0;
		loop_destroy_last(c);
	}
}

void loop_stream_sweep(struct lconn *c, int64_t t)
{
	if (!c->due_ms || t < c->due_ms)
		return;
	c->state = C_WAKING; /* the worker finds the deadline passed and ends it as it should */
	cancel_waits(c);
	if (!waits(c))
		wake(c);
}
