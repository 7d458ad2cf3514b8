/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_stream.h: one stream of an HTTP/2 tunnel (h2_front.c) — its request written as
 * HTTP/1.1 to the thread that serves it, that thread's HTTP/1.1 answer read back into HEADERS,
 * DATA and trailers. Internal to h2_front.c and h2_stream.c. */
#ifndef BULKHEAD_BROKER_H2_STREAM_H
#define BULKHEAD_BROKER_H2_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include <http_parser.h>
#include <nghttp2/nghttp2.h>

#include "broker/h2_fields.h"

struct conn;

#define H2_MAX_STREAMS 32	   /* open at once: each has a thread (SETTINGS) */
#define H2_OUT_MAX     (64 * 1024) /* answer bytes read ahead of the guest's window */

struct h2_stream {
	int32_t id;
	int fd; /* our end of the socket pair to the stream's thread; -1: closed */
	int64_t t0;
	/* The request, as HTTP/1.1 toward the thread. */
	char method[16];
	int is_head, scheme_ok, has_cl;
	struct h2_buf fields; /* "name: value\r\n" of the regular fields */
	struct h2_buf cookie; /* every cookie field, joined by "; " (RFC 9113 8.2.3) */
	struct h2_buf path, authority, host;
	size_t field_bytes; /* names and values received, for the bound */
	unsigned seen;	    /* SEEN_* (h2_stream.c): which pseudo-fields, and any other */
	struct h2_buf rq;   /* bytes for the thread, not yet written */
	size_t unconsumed;  /* DATA bytes queued in rq and not yet given back to the window */
	int rq_chunked, rq_ended, dispatched, to_start;
	int bad;      /* a field was past the bound or unsafe: the request is refused */
	int threaded; /* a thread serves it (and records it) */
	int recorded; /* ... or its record is written */
	/* The answer, from the thread. */
	http_parser rp;
	int rp_ready;
	struct h2_fields ans; /* its fields, then its trailers */
	size_t trailers_from;
	int headed, done, deferred, broken;
	struct h2_buf out; /* body bytes for DATA frames */
	struct h2_stream *next;
};

/* h2_threads.c: each stream's request is served on a thread of its own (proxy_conn_serve, as
 * in a tunnel to TUN's host) through a socket pair. */
struct h2_threads {
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned live;
};
void h2_threads_init(struct h2_threads *t);
/* Our end of the new thread's socket pair (non-blocking), or -1 when none can be had: *OVER
 * then names the budget of streams at once that is spent ("session", "broker"; hold_budget.h
 * H2_STREAMS_*), or is NULL (out of threads or memory). */
int h2_thread_start(struct h2_threads *t, const struct conn *tun, const char **over);
/* Waits until every thread started has ended. */
void h2_threads_wait(struct h2_threads *t);

/* h2_stream.c */
struct h2_stream *h2_stream_new(int32_t id);
void h2_stream_free(struct h2_stream *s);
/* A request field as nghttp2 gave it (checked by its HTTP messaging rules): 0, or -1 when
 * the stream's fields are past the bound. */
int h2_stream_field(struct h2_stream *s, const uint8_t *name, size_t nlen, const uint8_t *val,
		    size_t vlen);
/* The request's head is whole (END_STREAM: it has no body): its HTTP/1.1 head in s->rq.
 * 0, or an HTTP status to answer with (WHY says why). Host is checked against the CONNECT
 * host by the stream's thread, as in any tunnel. */
int h2_stream_head(struct h2_stream *s, int end_stream, char *why, size_t whylen);
/* DATA bytes of the request, and its end. */
int h2_stream_body(struct h2_stream *s, const uint8_t *data, size_t len);
int h2_stream_body_end(struct h2_stream *s);
/* Bytes the thread answered (LEN 0: its end): fed to the answer's parser, which submits its
 * head and trailers and queues its body. 0, or -1 when the answer is broken. */
int h2_stream_answer(struct h2_stream *s, nghttp2_session *ss, const char *b, size_t len);
/* The broker's own answer STATUS with WHY, as if the thread had given it. */
int h2_stream_refuse(struct h2_stream *s, nghttp2_session *ss, int status, const char *why);

#endif
