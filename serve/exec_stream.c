/* SPDX-License-Identifier: Apache-2.0 */
/* serve/exec_stream.c: an exec's NDJSON stream. It runs in its HTTP connection's thread,
 * inside the answer's reader: it waits (poll) for the guest, the client's socket and the
 * exec's control pipe, and returns one frame at a time. Output passes through a pipe of 64
 * KiB that is read only when the client takes the last frame, so a slow reader holds the
 * command back and memory stays bounded. A client that goes away ends the command. */
#include "session/exec_client.h"
#include "serve/exec_internal.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEARTBEAT_MS 15000
#define CHUNK	     (24 * 1024) /* raw bytes per output frame */

/* A frame {"KEY": base64(data)}. */
static void frame_data(struct serve_exec *e, const char *key, const unsigned char *data, size_t n)
{
	size_t cap = strlen(key) + 4 * ((n + 2) / 3) + 16;
	char *f = malloc(cap);
	if (!f)
		return;
	int h = snprintf(f, cap, "{\"%s\":\"", key);
	int b = EVP_EncodeBlock((unsigned char *)f + h, data, (int)n);
	memcpy(f + h + b, "\"}\n", 3);
	free(e->frame);
	e->frame = f;
	e->flen = (size_t)h + (size_t)b + 3;
	e->foff = 0;
}

static void frame_json(struct serve_exec *e, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(o);
	free(e->frame);
	e->frame = NULL;
	e->flen = e->foff = 0;
	if (!s)
		return;
	size_t n = strlen(s);
	e->frame = realloc(s, n + 2);
	if (!e->frame) {
		free(s);
		return;
	}
	e->frame[n] = '\n';
	e->flen = n + 1;
}

/* Reads one chunk from a pipe into a frame: 1 framed, 0 nothing now, -1 end of file. */
static int pipe_frame(struct serve_exec *e, int *fd, const char *key)
{
	static __thread unsigned char buf[CHUNK];
	ssize_t r = read(*fd, buf, sizeof(buf));
	if (r > 0) {
		frame_data(e, key, buf, (size_t)r);
		return 1;
	}
	if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
		exec_closefd(fd);
		return -1;
	}
	return 0;
}

static void apply_ctl(struct serve_exec *e)
{
	struct ctl_msg m;
	while (read(e->ctl_r, &m, sizeof(m)) == (ssize_t)sizeof(m)) {
		if (m.kind == 's')
			exec_client_signal(e->c, m.a);
		else if (m.kind == 'w')
			exec_client_winsize(e->c, (uint16_t)m.a, (uint16_t)m.b);
	}
}

static void feed_stdin(struct serve_exec *e)
{
	ssize_t w = write(e->in_w, e->feed + e->feed_off, e->feed_len - e->feed_off);
	if (w > 0)
		e->feed_off += (size_t)w;
	if ((w < 0 && errno != EAGAIN) || e->feed_off == e->feed_len)
		exec_closefd(&e->in_w); /* all given: end of file */
}

/* The exec's end: the exit frame once both pipes are drained. */
static void final_frame(struct serve_exec *e)
{
	struct exec_client *c = e->c;
	if (c->error[0])
		frame_json(e, json_pack("{ss}", "error", c->error));
	else
		frame_json(e, json_pack("{s{sosisi}}", "exit", "code",
					c->exit.signal ? json_null() : json_integer(c->exit.code),
					"signal", c->exit.signal, "status", exec_client_status(c)));
	e->phase = 2;
}

/* Makes the next frame; 0 made (or a heartbeat: flen 1), -1 the client went away. */
static int next_frame(struct serve_exec *e)
{
	for (;;) {
		if (e->out_r >= 0 && pipe_frame(e, &e->out_r, "stdout") > 0)
			return 0;
		if (e->err_r >= 0 && pipe_frame(e, &e->err_r, "stderr") > 0)
			return 0;
		if (e->over && e->out_r < 0 && e->err_r < 0) {
			final_frame(e);
			return 0;
		}
		struct pollfd pfd[EXEC_CLIENT_POLLFDS + 5];
		int n = e->over ? 0 : exec_client_pollfds(e->c, pfd);
		int pi_out = n, pi_err = n + 1, pi_ctl = n + 2, pi_cli = n + 3, pi_in = n + 4;
		pfd[pi_out] = (struct pollfd){ .fd = e->out_r, .events = POLLIN };
		pfd[pi_err] = (struct pollfd){ .fd = e->err_r, .events = POLLIN };
		pfd[pi_ctl] = (struct pollfd){ .fd = e->over ? -1 : e->ctl_r, .events = POLLIN };
		pfd[pi_cli] = (struct pollfd){ .fd = e->client_fd, .events = POLLRDHUP };
		pfd[pi_in] = (struct pollfd){ .fd = e->feed && e->in_w >= 0 ? e->in_w : -1,
					      .events = POLLOUT };
		int tmo = e->over ? HEARTBEAT_MS : exec_client_timeout_ms(e->c);
		if (tmo < 0 || tmo > HEARTBEAT_MS)
			tmo = HEARTBEAT_MS;
		int got = poll(pfd, (nfds_t)n + 5, tmo);
		if (got < 0 && errno != EINTR)
			return -1;
		if (got == 0) {
			if (!e->over && exec_client_handle(e->c, pfd, 0) != 0) {
				e->over = true;
				exec_closefd(&e->out_w);
				exec_closefd(&e->err_w);
				continue;
			}
			frame_json(e, json_null()); /* "null": a heartbeat, replaced below */
			e->frame[0] = '\n';
			e->flen = 1;
			return 0;
		}
		if (pfd[pi_cli].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return -1; /* closing the exec's stream ends the command */
		if (pfd[pi_ctl].revents)
			apply_ctl(e);
		if (pfd[pi_in].revents)
			feed_stdin(e);
		if (!e->over) {
			int rc = exec_client_handle(e->c, pfd, n);
			if (rc != 0) {
				e->over = true;
				exec_closefd(&e->out_w);
				exec_closefd(&e->err_w);
			}
		}
	}
}

ssize_t exec_stream_read(void *cls, char *buf, size_t max)
{
	struct serve_exec *e = cls;
	if (e->foff == e->flen) {
		if (e->phase == 2)
			return SERVE_BODY_END;
		if (e->phase == 0) {
			frame_json(e, json_pack("{ss}", "exec", e->id));
			e->phase = 1;
		} else if (next_frame(e) < 0 || !e->frame) {
			return SERVE_BODY_CUT;
		}
	}
	size_t n = e->flen - e->foff < max ? e->flen - e->foff : max;
	memcpy(buf, e->frame + e->foff, n);
	e->foff += n;
	return (ssize_t)n;
}

void exec_stream_free(void *cls)
{
	exec_put(cls);
}
