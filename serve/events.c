/* SPDX-License-Identifier: Apache-2.0 */
/* serve/events.c: lifecycle events — a ring of the last EVENTS_KEPT, each a JSON line with a
 * sequence number, and GET /v1/events streaming them as they come (a client names the last
 * one it saw with ?since= and misses nothing still kept). */
#include "session/approvals.h"
#include "serve/serve.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EVENTS_KEPT    1024
#define HEARTBEAT_MS   15000
#define APPROVALS_SEEN 512

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;
static char *ring[EVENTS_KEPT];
static uid_t owner[EVENTS_KEPT]; /* whose session an event is about ((uid_t)-1: none) */
static long long next_seq = 1;	 /* the sequence number of the next event */

static void add(json_t *ev, uid_t who)
{
	pthread_mutex_lock(&lock);
	json_object_set_new(ev, "seq", json_integer(next_seq));
	json_object_set_new(ev, "time", json_real(serve_wall()));
	char *line = json_dumps(ev, JSON_COMPACT);
	free(ring[next_seq % EVENTS_KEPT]);
	ring[next_seq % EVENTS_KEPT] = line;
	owner[next_seq % EVENTS_KEPT] = who;
	next_seq++;
	pthread_cond_broadcast(&more);
	pthread_mutex_unlock(&lock);
	json_decref(ev);
}

void serve_event(const char *type, const struct serve_session *s, json_t *extra)
{
	json_t *ev = extra && json_is_object(extra) ? extra : json_object();
	json_object_set_new(ev, "type", json_string(type));
	if (s)
		json_object_set_new(ev, "session", json_string(s->id));
	add(ev, s ? s->owner_uid : (uid_t)-1);
}

struct stream {
	long long seq; /* the next to send */
	struct serve_peer peer;
	int client_fd;
	char *line;
	size_t len, off;
};

/* The next line to send, waiting for one; NULL after HEARTBEAT_MS (send a newline) or when
 * the client has gone (*gone). */
static char *next_line(struct stream *st, bool *gone)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += HEARTBEAT_MS / 1000;
	pthread_mutex_lock(&lock);
	for (;;) {
		if (st->seq < next_seq - EVENTS_KEPT + 1)
			st->seq = next_seq - EVENTS_KEPT + 1; /* the oldest kept */
		if (st->seq < 1)
			st->seq = 1;
		/* A tenant sees its own sessions' events only. */
		while (st->seq < next_seq && !serve_peer_admin(&st->peer) &&
		       owner[st->seq % EVENTS_KEPT] != st->peer.uid)
			st->seq++;
		if (st->seq < next_seq) {
			char *line = strdup(ring[st->seq % EVENTS_KEPT]);
			st->seq++;
			pthread_mutex_unlock(&lock);
			return line;
		}
		struct pollfd p = { .fd = st->client_fd, .events = POLLRDHUP };
		if (serve.stopping ||
		    (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))) {
			*gone = true;
			break;
		}
		struct timespec step;
		clock_gettime(CLOCK_REALTIME, &step);
		step.tv_sec += 1;
		if (step.tv_sec > until.tv_sec)
			step = until;
		if (pthread_cond_timedwait(&more, &lock, &step) == ETIMEDOUT &&
		    step.tv_sec == until.tv_sec)
			break;
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static ssize_t reader(void *cls, char *buf, size_t max)
{
	struct stream *st = cls;
	if (st->off == st->len) {
		free(st->line);
		st->line = NULL; /* stream_free frees what is left */
		bool gone = false;
		char *line = next_line(st, &gone);
		if (gone)
			return SERVE_BODY_CUT;
		if (!line) {
			st->line = NULL;
			buf[0] = '\n';
			st->len = st->off = 0;
			return 1;
		}
		st->len = strlen(line) + 1;
		line[st->len - 1] = '\n'; /* the NUL becomes the line's end */
		st->line = line;
		st->off = 0;
	}
	size_t n = st->len - st->off < max ? st->len - st->off : max;
	memcpy(buf, st->line + st->off, n);
	st->off += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;
	free(st->line);
	free(st);
}

enum serve_err serve_events_body(long long since, int client_fd, const struct serve_peer *peer,
				 struct serve_body *body)
{
	struct stream *st = calloc(1, sizeof(*st));
	if (!st)
		return SERVE_E_INTERNAL;
	pthread_mutex_lock(&lock);
	/* No since, or one beyond the last: from now on. */
	st->seq = since >= 0 && since < next_seq ? since + 1 : next_seq;
	pthread_mutex_unlock(&lock);
	st->client_fd = client_fd;
	st->peer = *peer;
	/* A first empty line (a heartbeat) sends the answer's head at once: a client sees the
	 * stream open before any event. */
	st->line = strdup("\n");
	st->len = st->line ? 1 : 0;
	*body = (struct serve_body){
		.fd = -1, .read = reader, .release = stream_free, .cls = st, .block = 4096
	};
	return SERVE_OK;
}

/* approval.pending for each approval not seen before (the main thread, once a second). */
void serve_events_poll_approvals(void)
{
	static char seen[APPROVALS_SEEN][64];
	static size_t nseen;
	json_t *all = approvals_collect(NULL), *a;
	size_t i;
	json_array_foreach(all, i, a)
	{
		const char *id = json_string_value(json_object_get(a, "id"));
		if (!id || strlen(id) >= 64)
			continue;
		bool known = false;
		for (size_t k = 0; k < APPROVALS_SEEN && !known; k++)
			known = strcmp(seen[k], id) == 0;
		if (known)
			continue;
		snprintf(seen[nseen++ % APPROVALS_SEEN], 64, "%s", id);
		json_t *ev =
			json_pack("{ss ss* ss* ss*}", "id", id, "method",
				  json_string_value(json_object_get(a, "method")), "url",
				  json_string_value(json_object_get(a, "url")), "approval_session",
				  json_string_value(json_object_get(a, "session")));
		json_object_set(ev, "session", json_object_get(a, "session"));
		json_object_del(ev, "approval_session");
		serve_event("approval.pending", NULL, ev);
	}
	json_decref(all);
}
