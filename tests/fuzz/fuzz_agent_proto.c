/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_agent_proto.c: libFuzzer target for the exec agent protocol
 * (lib/agent_proto.h) as the host reads it: the input, after one byte that picks
 * the reader's buffer size, is the byte stream a hostile guest agent writes.
 *
 * The stream is read twice. First by the push parser (agent_parse), fed in pieces of
 * varying sizes, each result checked against an independent model of the header's rules
 * (version, reserved, per-type lengths, -EMSGSIZE, -EIO inside a frame, 0 at a clean
 * end), each good frame re-encoded by agent_send() to the very same bytes, and every EXEC
 * and EXIT payload decoded and re-encoded to the same bytes. Then through
 * exec_client_handle() in a poll loop, exactly as `bulkhead exec` does, checking what
 * reaches stdout/stderr, the EXIT status ranges and the outcome. */
#include "session/exec_client.h"
#include "lib/agent_proto.h"

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* What the header documents, written again so that the parser is checked, not copied. */
static bool model_len_ok(unsigned type, uint32_t n)
{
	switch (type) {
	case 1: /* EXEC: the fixed part, then at least cwd and argv[0] with their NULs */
		return n >= 16 + 2;
	case 2:	 /* STDIN */
	case 16: /* STDOUT */
	case 17: /* STDERR */
	case 19: /* ERROR */
		return true;
	case 3: /* SIGNAL */
	case 4: /* WINSIZE */
		return n == 4;
	case 18: /* EXIT */
		return n == 8;
	case 20: /* READY */
	case 21: /* TEMPLATE_READY */
		return n == 0;
	case 5: /* SESSION: entropy, time, then at least the arguments' NUL, at most 2047 bytes */
		return n >= 64 + 12 + 1 && n <= 64 + 12 + 2047 + 1;
	case 6: /* CLOCK */
		return n == 12;
	}
	return false;
}

/* The model's verdict for the frame at *off: a type, 0 at the end, or -errno. */
static int model_next(const uint8_t *s, size_t size, size_t *off, size_t bufsize,
		      const uint8_t **payload, uint32_t *len)
{
	size_t left = size - *off;
	if (left == 0)
		return 0;
	if (left < 8)
		return -EIO;
	const uint8_t *h = s + *off;
	uint32_t n =
		(uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
	if (h[0] != 1 || h[2] || h[3] || n > 65536 || !model_len_ok(h[1], n))
		return -EPROTO;
	if (n > bufsize)
		return -EMSGSIZE;
	if (left - 8 < n)
		return -EIO;
	*payload = h + 8;
	*len = n;
	*off += 8 + n;
	return h[1];
}

static int memfd_with(const void *buf, size_t len)
{
	int fd = memfd_create("fuzz", 0);
	if (fd < 0 || (len && write(fd, buf, len) != (ssize_t)len) || lseek(fd, 0, SEEK_SET))
		abort();
	return fd;
}

/* Everything written to fd so far, which must equal want[0..len). */
static void assert_file_is(int fd, const uint8_t *want, size_t len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	assert(end == (off_t)len);
	uint8_t *got = malloc(len + 1);
	ssize_t n = pread(fd, got, len, 0);
	assert(n == (ssize_t)len && memcmp(got, want, len) == 0);
	free(got);
}

/* The guest agent's side of an EXEC payload: accepted means well-formed and re-encodable. */
static void check_exec(const uint8_t *p, uint32_t n)
{
	struct agent_exec_req req;
	int rc = agent_exec_decode(p, n, &req);
	if (rc < 0) {
		assert(rc == -EPROTO && !req.argv && !req.env);
		return;
	}
	assert(rc == 0 && req.argc >= 1 && req.argc <= AGENT_MAX_ARGS &&
	       req.envc <= AGENT_MAX_ARGS);
	assert(req.argv[req.argc] == NULL && req.env[req.envc] == NULL);
	assert(req.cwd[0] == '/' && req.argv[0][0] != '\0');
	const char *lo = (const char *)p, *hi = (const char *)p + n;
	for (uint32_t i = 0; i < req.argc; i++)
		assert(req.argv[i] > lo && req.argv[i] + strlen(req.argv[i]) < hi);
	for (uint32_t i = 0; i < req.envc; i++)
		assert(req.env[i] > lo && req.env[i] + strlen(req.env[i]) < hi &&
		       strchr(req.env[i], '=') && req.env[i][0] != '=');
	uint8_t *again = malloc(n);
	long m = agent_exec_encode(again, n, req.flags, req.rows, req.cols, req.cwd,
				   (char *const *)req.argv, (char *const *)req.env);
	assert(m == (long)n && memcmp(again, p, n) == 0);
	free(again);
	agent_exec_free(&req);
}

/* Pass 1: the push parser against the model, fed in pieces whose sizes come from the
 * input itself: a frame split anywhere must parse exactly as a whole one. */
static void check_parse(const uint8_t *s, size_t size, size_t bufsize, uint8_t split)
{
	static struct agent_parser p; /* 64 KiB: not on the stack */
	agent_parser_init(&p, bufsize);
	size_t off = 0, pos = 0, step = (size_t)split % 17 + 1;
	for (;;) {
		const uint8_t *want = NULL;
		uint32_t wlen = 0;
		size_t start = off;
		int expect = model_next(s, size, &off, bufsize, &want, &wlen);
		int got = 0;
		/* Feed pieces until the parser says something or the stream ends. */
		while (got == 0 && pos < size) {
			size_t n = size - pos < step ? size - pos : step, used = 0;
			got = agent_parse(&p, s + pos, n, &used);
			assert(used <= n);
			pos += used;
			if (got == 0)
				assert(used == n); /* it takes everything while it needs more */
			step = step * 7 % 31 + 1;
		}
		if (got == 0) /* the stream ended: clean only between frames */
			got = agent_parser_idle(&p) ? 0 : -EIO;
		assert(got == expect);
		if (got <= 0) {
			if (got < 0 && got != -EIO) /* errors are sticky */
				assert(agent_parse(&p, (const uint8_t *)"x", 1, &(size_t){ 0 }) ==
				       got);
			break;
		}
		assert(pos == off); /* a whole frame ends exactly where the model says */
		assert(p.len == wlen && p.len <= bufsize);
		assert(p.len == 0 || memcmp(p.payload, want, p.len) == 0);
		/* The writer produces the same frame back. */
		int out = memfd_with(NULL, 0);
		assert(agent_send(out, got, p.payload, p.len) == 0);
		assert_file_is(out, s + start, AGENT_HDR_LEN + p.len);
		close(out);
		if (got == AGENT_EXEC)
			check_exec(p.payload, p.len);
		if (got == AGENT_EXIT) {
			struct agent_exit e;
			if (agent_exit_decode(p.payload, p.len, &e) == 0) {
				uint8_t again[AGENT_EXIT_LEN];
				agent_exit_encode(again, e.code, e.signal);
				assert(memcmp(again, p.payload, AGENT_EXIT_LEN) == 0);
			}
		}
		/* What decodes encodes back to the same bytes, and in range. */
		if (got == AGENT_SESSION) {
			struct agent_session ses;
			static uint8_t again[AGENT_SESSION_FIXED + AGENT_SESSION_ARGS_MAX + 1];
			if (agent_session_decode(p.payload, p.len, &ses) == 0) {
				assert(ses.sec >= 0 && ses.sec <= AGENT_CLOCK_MAX && ses.nsec < 1000000000u);
				assert(agent_session_encode(again, sizeof(again), &ses) == (long)p.len &&
				       memcmp(again, p.payload, p.len) == 0);
			}
		}
		if (got == AGENT_CLOCK) {
			int64_t sec;
			uint32_t nsec;
			if (agent_clock_decode(p.payload, p.len, &sec, &nsec) == 0) {
				uint8_t again[AGENT_CLOCK_LEN];
				agent_clock_encode(again, sec, nsec);
				assert(memcmp(again, p.payload, AGENT_CLOCK_LEN) == 0);
			}
		}
	}
}

static struct exec_client c; /* its buffers are large: not on the stack */

/* Pass 2: the stream through exec_client_handle(), as `bulkhead exec` reads it, called
 * as a poll loop would until the exec is over. */
static void check_client(const uint8_t *s, size_t size)
{
	int sock = memfd_with(s, size), out = memfd_with(NULL, 0), err = memfd_with(NULL, 0);
	memset(&c, 0, sizeof(c));
	c.sock = sock;
	c.in_fd = -1;
	c.out_fd = out;
	c.err_fd = err;
	c.wout_fd = -1;
	c.state = EXEC_RUNNING;
	agent_reader_init(&c.rd, AGENT_MAX_PAYLOAD);
	int rc = 0, rounds = 0;
	while (rc == 0) {
		struct pollfd pfd[EXEC_CLIENT_POLLFDS];
		int n = exec_client_pollfds(&c, pfd);
		for (int i = 0; i < n; i++)
			pfd[i].revents = pfd[i].events;
		rc = exec_client_handle(&c, pfd, n);
		assert(memchr(c.error, '\0', sizeof(c.error)));
		assert(++rounds < 1000000); /* every call makes progress */
	}
	/* What the model says the stream means. */
	uint8_t *want_out = malloc(size + 1), *want_err = malloc(size + 1);
	size_t nout = 0, nerr = 0, off = 0;
	const uint8_t *p = NULL;
	uint32_t n = 0;
	int type;
	while ((type = model_next(s, size, &off, AGENT_MAX_PAYLOAD, &p, &n)) == AGENT_STDOUT ||
	       type == AGENT_STDERR) {
		memcpy(type == AGENT_STDOUT ? want_out + nout : want_err + nerr, p, n);
		*(type == AGENT_STDOUT ? &nout : &nerr) += n;
	}
	if (type == AGENT_EXIT) {
		int32_t code = (int32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24);
		int32_t sig = (int32_t)(p[4] | p[5] << 8 | p[6] << 16 | (uint32_t)p[7] << 24);
		bool ok = (code >= 0 && code <= 255 && sig == 0) ||
			  (code == -1 && sig >= 1 && sig <= 64);
		assert(rc == (ok ? 1 : -1) && c.done == ok);
		if (ok)
			assert(c.exit.code == code && c.exit.signal == sig);
	} else if (type == AGENT_ERROR) {
		assert(rc == 1 && c.done);
		size_t k = strlen(c.error);
		assert(k == (n < sizeof(c.error) - 1 ? n : sizeof(c.error) - 1));
		for (size_t i = 0; i < k; i++) /* no control bytes reach the terminal */
			assert((unsigned char)c.error[i] >= 0x20 && c.error[i] != 0x7f);
	} else {
		/* Host-bound types, malformed frames and the end of the stream all fail. */
		assert(rc == -1 && !c.done && c.error[0] != '\0');
	}
	assert_file_is(out, want_out, nout);
	assert_file_is(err, want_err, nerr);
	free(want_out);
	free(want_err);
	close(out);
	close(err);
	exec_client_close(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	/* High bit clear: the exec client's full buffer. Set: a small one (session_agent.c
	 * reads READY into an empty buffer). */
	size_t bufsize = data[0] & 0x80 ? (size_t)(data[0] & 0x7f) : AGENT_MAX_PAYLOAD;
	check_parse(data + 1, size - 1, bufsize, data[0]);
	check_client(data + 1, size - 1);
	return 0;
}
