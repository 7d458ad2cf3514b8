/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_front.c: HTTP/2 from the guest (proxy_internal.h's h2_front_serve), on libnghttp2's server session. The
 * guest's TLS is read and written here without blocking; each stream's request goes to a
 * thread of its own (proxy_conn_serve, as in an HTTP/1.1 tunnel) through a socket pair, and
 * its answer comes back the same way (h2_stream.c).
 *
 * What bounds a guest: at most H2_MAX_STREAMS streams (so threads) at once; per stream, a
 * window of 64 KiB that is given back only once its bytes have gone to the stream's thread,
 * and at most H2_OUT_MAX of answer read ahead of what the guest takes; nghttp2's limits on
 * SETTINGS, CONTINUATION frames, resets and control frames that need answers (the
 * "Rapid Reset", "CONTINUATION flood" and ping floods); a head must be whole within the head
 * timeout, and a connection with no streams may be silent for the idle timeout. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "broker/h2_stream.h"
#include "broker/proxy_internal.h"
#include "lib/mono.h"

#define SEND_MAX (64 * 1024) /* frames toward the guest not yet written */

struct front {
	struct conn *c;
	nghttp2_session *ss;
	struct h2_stream *streams;
	unsigned nstreams;
	uint8_t send[SEND_MAX];
	size_t slen;
	int guest_gone;
	int64_t last_active;
	struct h2_threads threads; /* the streams' threads: the tunnel outlives them all */
};

/* --- nghttp2's callbacks --------------------------------------------------------------- */

static ssize_t on_send(nghttp2_session *ss, const uint8_t *data, size_t len, int flags, void *user)
{
	struct front *f = user;
	size_t room = sizeof(f->send) - f->slen;

	(void)ss, (void)flags;
	if (!room)
		return NGHTTP2_ERR_WOULDBLOCK;
	if (len > room)
		len = room;
	memcpy(f->send + f->slen, data, len);
	f->slen += len;
	return (ssize_t)len;
}

static int on_begin_headers(nghttp2_session *ss, const nghttp2_frame *fr, void *user)
{
	struct front *f = user;
	struct h2_stream *s;

	if (fr->hd.type != NGHTTP2_HEADERS || fr->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	/* Before the guest has our SETTINGS it may open more than they allow. */
	if (f->nstreams >= H2_MAX_STREAMS) {
		nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, fr->hd.stream_id,
					  NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	s = h2_stream_new(fr->hd.stream_id);
	if (!s)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->t0 = mono_ms();
	s->next = f->streams;
	f->streams = s;
	f->nstreams++;
	nghttp2_session_set_stream_user_data(ss, fr->hd.stream_id, s);
	return 0;
}

static int on_header(nghttp2_session *ss, const nghttp2_frame *fr, const uint8_t *name, size_t nlen,
		     const uint8_t *val, size_t vlen, uint8_t flags, void *user)
{
	struct h2_stream *s = nghttp2_session_get_stream_user_data(ss, fr->hd.stream_id);

	(void)flags, (void)user;
	/* Trailers of the request are not forwarded: only the head's fields are kept. */
	if (!s || s->dispatched || s->bad || fr->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if (h2_stream_field(s, name, nlen, val, vlen))
		s->bad = 1;
	return 0;
}

/* The record of a stream no thread serves (its thread writes its own). */
static void record(struct front *f, struct h2_stream *s, int status, const char *why,
		   const char *outcome)
{
	char path[160];
	size_t n = s->path.len < sizeof(path) - 1 ? s->path.len : sizeof(path) - 1;

	if (s->recorded)
		return;
	s->recorded = 1;
	if (n)
		memcpy(path, s->path.p, n);
	path[n] = 0;
	proxy_tunnel_stream_record(f->c, s->method, path, status, why, outcome);
}

static void refuse(struct front *f, struct h2_stream *s, int status, const char *why)
{
	s->dispatched = 0;
	if (h2_stream_refuse(s, f->ss, status, why))
		nghttp2_submit_rst_stream(f->ss, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
	record(f, s, status, why, NULL);
}

static void head_done(struct front *f, struct h2_stream *s, int end_stream)
{
	char why[200];
	int status;

	if (s->bad) {
		refuse(f, s, 431,
		       "the request's fields are too large, repeat a pseudo-field, or hold bytes "
		       "HTTP/1.1 cannot carry");
		return;
	}
	status = h2_stream_head(s, end_stream, why, sizeof(why));
	if (status) {
		refuse(f, s, status, why);
		return;
	}
	s->to_start = 1; /* once this read's frames are in: a stream reset in them never starts */
}

/* Streams whose heads came in the last read, and are still open, get their threads. */
static void start_streams(struct front *f)
{
	for (struct h2_stream *s = f->streams; s; s = s->next)
		if (s->to_start) {
			s->to_start = 0;
			const char *over;
			char why[160];

			if ((s->fd = h2_thread_start(&f->threads, f->c, &over)) >= 0) {
				s->threaded = 1;
				continue;
			}
			if (over)
				snprintf(why, sizeof(why),
					 "too many HTTP/2 streams at once: the %s's limit is %d",
					 over, !strcmp(over, "session") ? H2_STREAMS_SESSION
									: H2_STREAMS_TOTAL);
			else
				snprintf(why, sizeof(why), "no thread for another stream");
			refuse(f, s, 503, why);
		}
}

static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *fr, void *user)
{
	struct front *f = user;
	struct h2_stream *s = nghttp2_session_get_stream_user_data(ss, fr->hd.stream_id);
	int end = !!(fr->hd.flags & NGHTTP2_FLAG_END_STREAM);

	f->last_active = mono_ms();
	if (!s)
		return 0;
	if (fr->hd.type == NGHTTP2_HEADERS && fr->headers.cat == NGHTTP2_HCAT_REQUEST)
		head_done(f, s, end);
	else if ((fr->hd.type == NGHTTP2_HEADERS || fr->hd.type == NGHTTP2_DATA) && end &&
		 s->dispatched && h2_stream_body_end(s))
		nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
	return 0;
}

static int on_data(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *user)
{
	struct h2_stream *s = nghttp2_session_get_stream_user_data(ss, id);

	(void)flags, (void)user;
	if (!s || !s->dispatched || (s->fd < 0 && !s->to_start)) { /* refused, or answered */
		nghttp2_session_consume(ss, id, len);
		return 0;
	}
	if (h2_stream_body(s, data, len)) {
		nghttp2_session_consume(ss, id, len);
		nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, id, NGHTTP2_FLOW_CONTROL_ERROR);
	}
	return 0;
}

static int on_stream_close(nghttp2_session *ss, int32_t id, uint32_t err, void *user)
{
	struct front *f = user;
	struct h2_stream **pp = &f->streams;

	(void)err;
	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	if (!*pp)
		return 0;
	struct h2_stream *s = *pp;
	*pp = s->next;
	f->nstreams--;
	f->last_active = mono_ms(); /* the idle clock starts when the last stream ends */
	if (s->unconsumed)
		nghttp2_session_consume_connection(ss, s->unconsumed);
	/* A stream that ended before a thread served it: the guest's reset, or nghttp2's for a
	 * head that breaks HTTP/2's rules (RFC 9113 8.2). */
	if (!s->threaded && (err == NGHTTP2_NO_ERROR || err == NGHTTP2_CANCEL))
		record(f, s, 0, "", AUDIT_OUTCOME_GUEST_CLOSED);
	else if (!s->threaded)
		record(f, s, 400, nghttp2_http2_strerror(err), NULL);
	if (s->fd >= 0)
		close(s->fd); /* its thread sees the hang-up and ends the request */
	nghttp2_session_set_stream_user_data(ss, id, NULL);
	h2_stream_free(s);
	return 0;
}

/* --- the loop -------------------------------------------------------------------------- */

static int session_make(struct front *f)
{
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	int rc;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_MAX_STREAMS },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65535 },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_HEAD_MAX },
	};

	if (nghttp2_session_callbacks_new(&cb))
		return -1;
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	if (nghttp2_option_new(&opt)) {
		nghttp2_session_callbacks_del(cb);
		return -1;
	}
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_settings(opt, 32);
	nghttp2_option_set_max_continuations(opt, 8);
	nghttp2_option_set_stream_reset_rate_limit(opt, 200, 50);
	nghttp2_option_set_max_outbound_ack(opt, 100);
	nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
	rc = nghttp2_session_server_new2(&f->ss, cb, f, opt);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cb);
	if (rc)
		return -1;
	/* Streams share the connection's window: 1 MiB, so that uploads at once do not wait on
	 * each other; each stream's own stays 64 KiB. */
	return nghttp2_submit_settings(f->ss, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) ||
	       nghttp2_session_set_local_window_size(f->ss, NGHTTP2_FLAG_NONE, 0, 1 << 20);
}

static int guest_write(struct front *f);

/* Reads what the guest's TLS has, into the session. -1 when the guest is gone. */
static int guest_read(struct front *f)
{
	SSL *ssl = f->c->cl_ssl;
	uint8_t buf[16384];

	for (;;) {
		int r = SSL_read(ssl, buf, sizeof(buf));

		if (r <= 0) {
			int e = SSL_get_error(ssl, r);

			ERR_clear_error();
			return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
		}
		f->last_active = mono_ms();
		if (nghttp2_session_mem_recv(f->ss, buf, (size_t)r) < 0) {
			/* A bad preface or a flood: the GOAWAY nghttp2 made says why. */
			nghttp2_session_send(f->ss);
			guest_write(f);
			return -1;
		}
	}
}

/* Writes what waits for the guest. -1 when the guest is gone. */
static int guest_write(struct front *f)
{
	SSL *ssl = f->c->cl_ssl;

	while (f->slen) {
		int w = SSL_write(ssl, f->send, (int)f->slen);

		if (w <= 0) {
			int e = SSL_get_error(ssl, w);

			ERR_clear_error();
			return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
		}
		memmove(f->send, f->send + w, f->slen - (size_t)w);
		f->slen -= (size_t)w;
	}
	return 0;
}

static void stream_broken(struct front *f, struct h2_stream *s)
{
	nghttp2_submit_rst_stream(f->ss, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* Moves a stream's bytes: its request toward its thread, its thread's answer back. */
static void stream_io(struct front *f, struct h2_stream *s, short revents)
{
	char buf[16384];

	while (s->fd >= 0 && s->rq.len > s->rq.off) {
		ssize_t w = send(s->fd, s->rq.p + s->rq.off, s->rq.len - s->rq.off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w < 0) { /* the thread has answered and gone: what is left is not needed */
			s->rq.off = s->rq.len;
			break;
		}
		s->rq.off += (size_t)w;
	}
	if (s->rq.off == s->rq.len) {
		s->rq.off = s->rq.len = 0;
		if (s->unconsumed) /* the window opens only for bytes its thread has */
			nghttp2_session_consume(f->ss, s->id, s->unconsumed);
		s->unconsumed = 0;
	}
	if (s->fd < 0 || !(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	while (s->fd >= 0 && s->out.len - s->out.off < H2_OUT_MAX) {
		ssize_t r = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			break;
		if (r <= 0) {
			if (h2_stream_answer(s, f->ss, NULL, 0))
				stream_broken(f, s);
			else if (s->fd >= 0) {
				close(s->fd);
				s->fd = -1;
			}
			break;
		}
		if (h2_stream_answer(s, f->ss, buf, (size_t)r))
			stream_broken(f, s);
	}
}

/* Deadlines: a head that is not whole in time ends the connection (its CONTINUATION frames
 * hold every other stream too), and so does silence with no stream open. */
static int late(struct front *f, int64_t now)
{
	const struct proxy_config *cfg = f->c->cfg;

	for (struct h2_stream *s = f->streams; s; s = s->next)
		if (!s->dispatched && !s->headed && cfg->head_timeout_ms > 0 &&
		    now - s->t0 > cfg->head_timeout_ms)
			return 1;
	return !f->nstreams && now - f->last_active > cfg->io_timeout_ms;
}

static void serve(struct front *f)
{
	struct pollfd p[1 + H2_MAX_STREAMS];
	struct h2_stream *by[1 + H2_MAX_STREAMS];

	while (!f->guest_gone) {
		if (nghttp2_session_send(f->ss) || guest_write(f) < 0)
			break;
		if (!nghttp2_session_want_read(f->ss) && !nghttp2_session_want_write(f->ss) &&
		    !f->slen)
			break;
		int n = 1;
		p[0] = (struct pollfd){ .fd = f->c->fd,
					.events = POLLIN | (f->slen ? POLLOUT : 0) };
		for (struct h2_stream *s = f->streams; s && n < 1 + H2_MAX_STREAMS; s = s->next) {
			if (s->fd < 0)
				continue;
			short ev = s->rq.len > s->rq.off ? POLLOUT : 0;
			if (s->out.len - s->out.off < H2_OUT_MAX)
				ev |= POLLIN;
			if (!ev) /* a hang-up would wake us while the guest's window is shut */
				continue;
			by[n] = s;
			p[n++] = (struct pollfd){ .fd = s->fd, .events = ev };
		}
		/* Records OpenSSL has read but not yet returned are not on the socket any more. */
		int pending = SSL_has_pending(f->c->cl_ssl);
		if (poll(p, (nfds_t)n, pending ? 0 : 1000) < 0 && errno != EINTR)
			break;
		int64_t now = mono_ms();
		if (late(f, now)) {
			nghttp2_session_terminate_session(f->ss, NGHTTP2_NO_ERROR);
			nghttp2_session_send(f->ss);
			guest_write(f);
			break;
		}
		if ((pending || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) && guest_read(f) < 0)
			f->guest_gone = 1;
		start_streams(f);
		for (int i = 1; i < n; i++)
			if (p[i].revents && by[i])
				stream_io(f, by[i], p[i].revents);
	}
}

void h2_front_serve(struct conn *c)
{
	struct front *f = calloc(1, sizeof(*f));

	if (!f)
		return;
	f->c = c;
	f->last_active = mono_ms();
	h2_threads_init(&f->threads);
	/* The head deadline of an HTTP/1.1 tunnel's reads does not apply: this loop keeps its
	 * own, per stream. */
	BIO_set_callback_ex(SSL_get_rbio(c->cl_ssl), NULL);
	SSL_set_mode(c->cl_ssl,
		     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	if (!session_make(f))
		serve(f);
	/* Every stream's thread sees its socket close, and ends. */
	while (f->streams) {
		struct h2_stream *s = f->streams;

		f->streams = s->next;
		if (s->fd >= 0)
			close(s->fd);
		h2_stream_free(s);
	}
	if (f->ss)
		nghttp2_session_del(f->ss);
	h2_threads_wait(&f->threads);
	c->close_after = 1;
	free(f);
}
