/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_agent_proto.c: the exec agent's frame parser, reader, writer and codecs. */
#include "lib/agent_proto.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

static char buf[AGENT_MAX_PAYLOAD + 16];
static struct agent_reader rd;

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

/* The next frame on fd through the reader, reading as poll would let us. */
static int next_frame(int fd)
{
	for (;;) {
		int t = agent_reader_next(&rd);
		if (t != -EAGAIN)
			return t;
		long r = agent_reader_fill(&rd, fd);
		if (r == -EAGAIN)
			return -EAGAIN; /* nothing more to read now: a caller would poll */
		assert_true(r >= 0);
	}
}

static void test_round_trip(void **state)
{
	(void)state;
	int sv[2];
	pair(sv);
	uint8_t sig[AGENT_SIGNAL_LEN];
	agent_signal_encode(sig, 2);
	assert_int_equal(agent_send(sv[0], AGENT_STDOUT, "hello", 5), 0);
	assert_int_equal(agent_send(sv[0], AGENT_STDIN, NULL, 0), 0);
	assert_int_equal(agent_send(sv[0], AGENT_SIGNAL, sig, sizeof(sig)), 0);
	agent_reader_init(&rd, AGENT_MAX_PAYLOAD);
	assert_int_equal(next_frame(sv[1]), AGENT_STDOUT);
	assert_int_equal(rd.p.len, 5);
	assert_memory_equal(rd.p.payload, "hello", 5);
	assert_int_equal(next_frame(sv[1]), AGENT_STDIN);
	assert_int_equal(rd.p.len, 0);
	assert_int_equal(next_frame(sv[1]), AGENT_SIGNAL);
	assert_int_equal(next_frame(sv[1]), -EAGAIN); /* nothing more yet: no blocking */
	close(sv[0]);
	assert_int_equal(next_frame(sv[1]), 0); /* clean end of stream */
	close(sv[1]);
}

/* Raw bytes the reader must refuse, or end with -EIO when the stream stops in a frame. */
static void expect_frame(const void *bytes, size_t n, int want)
{
	int sv[2];
	pair(sv);
	assert_int_equal(write(sv[0], bytes, n), (ssize_t)n);
	close(sv[0]);
	agent_reader_init(&rd, AGENT_MAX_PAYLOAD);
	assert_int_equal(next_frame(sv[1]), want);
	close(sv[1]);
}

static void hdr(uint8_t h[AGENT_HDR_LEN], int version, int type, int reserved, uint32_t len)
{
	agent_hdr_encode(h, type, len);
	h[0] = (uint8_t)version;
	h[2] = (uint8_t)reserved;
}

static void test_bad_frames(void **state)
{
	(void)state;
	uint8_t h[AGENT_HDR_LEN];
	hdr(h, 2, AGENT_STDOUT, 0, 0);
	expect_frame(h, sizeof(h), -EPROTO); /* wrong version */
	hdr(h, 1, 99, 0, 0);
	expect_frame(h, sizeof(h), -EPROTO); /* unknown type */
	hdr(h, 1, AGENT_STDOUT, 0, AGENT_MAX_PAYLOAD + 1);
	expect_frame(h, sizeof(h), -EPROTO); /* oversized */
	hdr(h, 1, AGENT_SIGNAL, 0, 3);
	expect_frame(h, sizeof(h), -EPROTO); /* wrong length for the type */
	hdr(h, 1, AGENT_EXIT, 0, 9);
	expect_frame(h, sizeof(h), -EPROTO);
	hdr(h, 1, AGENT_STDOUT, 1, 0);
	expect_frame(h, sizeof(h), -EPROTO); /* reserved bits set */
	hdr(h, 1, AGENT_STDOUT, 0, 10);
	expect_frame(h, sizeof(h), -EIO);				/* payload cut short */
	expect_frame(h, 3, -EIO);					/* header cut short */
	assert_int_equal(agent_send(0, AGENT_SIGNAL, buf, 3), -EINVAL); /* writer checks too */
	/* A reader that accepts no payload (the ready connection) refuses one. */
	int sv[2];
	pair(sv);
	assert_int_equal(agent_send(sv[0], AGENT_STDOUT, "x", 1), 0);
	agent_reader_init(&rd, 0);
	assert_int_equal(next_frame(sv[1]), -EMSGSIZE);
	/* Errors are sticky: nothing after a bad frame is read as a frame. */
	assert_int_equal(agent_reader_next(&rd), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);
}

/* A stream of frames split at every possible point parses to the same frames: the parser
 * keeps a half frame (header or payload) for as long as the peer takes. */
static void test_parse_any_split(void **state)
{
	(void)state;
	static struct agent_parser p;
	uint8_t stream[64];
	size_t n = 0;
	agent_hdr_encode(stream + n, AGENT_STDOUT, 3);
	memcpy(stream + n + AGENT_HDR_LEN, "abc", 3);
	n += AGENT_HDR_LEN + 3;
	agent_hdr_encode(stream + n, AGENT_READY, 0);
	n += AGENT_HDR_LEN;
	agent_hdr_encode(stream + n, AGENT_EXIT, AGENT_EXIT_LEN);
	agent_exit_encode(stream + n + AGENT_HDR_LEN, 7, 0);
	n += AGENT_HDR_LEN + AGENT_EXIT_LEN;
	const int want[] = { AGENT_STDOUT, AGENT_READY, AGENT_EXIT };
	for (size_t a = 0; a <= n; a++) {
		for (size_t b = a; b <= n; b++) {
			size_t cuts[] = { 0, a, b, n }, used;
			int k = 0;
			agent_parser_init(&p, AGENT_MAX_PAYLOAD);
			for (int piece = 0; piece < 3; piece++) {
				size_t pos = cuts[piece];
				while (pos < cuts[piece + 1]) {
					int t = agent_parse(&p, stream + pos, cuts[piece + 1] - pos,
							    &used);
					pos += used;
					if (t == 0) {
						assert_int_equal(pos, cuts[piece + 1]);
						continue;
					}
					assert_int_equal(t, want[k]);
					if (t == AGENT_STDOUT)
						assert_memory_equal(p.payload, "abc", 3);
					k++;
				}
			}
			assert_int_equal(k, 3);
			assert_true(agent_parser_idle(&p));
		}
	}
}

/* One byte of a header, then nothing: the reader says "more needed" at once and keeps
 * saying so; nothing blocks. Then the rest arrives a byte at a time. */
static void test_half_frame_never_blocks(void **state)
{
	(void)state;
	int sv[2];
	pair(sv);
	uint8_t h[AGENT_HDR_LEN + 2];
	agent_hdr_encode(h, AGENT_STDERR, 2);
	h[AGENT_HDR_LEN] = 'o';
	h[AGENT_HDR_LEN + 1] = 'k';
	agent_reader_init(&rd, AGENT_MAX_PAYLOAD);
	for (size_t i = 0; i < sizeof(h); i++) {
		assert_int_equal(next_frame(sv[1]), -EAGAIN);
		assert_int_equal(next_frame(sv[1]), -EAGAIN);
		assert_int_equal(write(sv[0], h + i, 1), 1);
	}
	assert_int_equal(next_frame(sv[1]), AGENT_STDERR);
	assert_memory_equal(rd.p.payload, "ok", 2);
	close(sv[0]);
	close(sv[1]);
}

/* A flood of whole frames: one fill reads at most one buffer, so a caller that parses
 * what it read and then polls again is never held in a loop by the peer. */
static void test_fill_is_bounded(void **state)
{
	(void)state;
	int sv[2];
	pair(sv);
	int sz = 1 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	static char big[4000];
	size_t sent = 0;
	while (agent_send(sv[0], AGENT_STDOUT, big, sizeof(big)) == 0 && sent < 100000)
		sent++;
	agent_reader_init(&rd, AGENT_MAX_PAYLOAD);
	assert_true(agent_reader_fill(&rd, sv[1]) > 0);
	size_t frames = 0;
	while (agent_reader_next(&rd) == AGENT_STDOUT)
		frames++;
	assert_true(frames > 0 && frames <= AGENT_READER_BUF / (AGENT_HDR_LEN + sizeof(big)));
	assert_true(sent > AGENT_READER_BUF / (AGENT_HDR_LEN + sizeof(big)) + 1);
	assert_true(frames < sent);
	close(sv[0]);
	close(sv[1]);
}

/* Fixed payloads: little-endian on the wire, every field's range checked. */
static void test_fixed_payloads(void **state)
{
	(void)state;
	uint8_t b[8];
	int sig;
	agent_signal_encode(b, 15);
	assert_memory_equal(b, "\x0f\0\0\0", 4);
	assert_int_equal(agent_signal_decode(b, 4, &sig), 0);
	assert_int_equal(sig, 15);
	assert_int_equal(agent_signal_decode(b, 3, &sig), -EPROTO);
	agent_signal_encode(b, 0);
	assert_int_equal(agent_signal_decode(b, 4, &sig), -EPROTO);
	agent_signal_encode(b, 65);
	assert_int_equal(agent_signal_decode(b, 4, &sig), -EPROTO);
	/* The process-alone bit comes back as sent; no other bit is taken. */
	agent_signal_encode(b, 15 | AGENT_SIGNAL_PROCESS);
	assert_int_equal(agent_signal_decode(b, 4, &sig), 0);
	assert_int_equal(sig, 15 | AGENT_SIGNAL_PROCESS);
	agent_signal_encode(b, 15 | 0x200);
	assert_int_equal(agent_signal_decode(b, 4, &sig), -EPROTO);
	agent_signal_encode(b, AGENT_SIGNAL_PROCESS);
	assert_int_equal(agent_signal_decode(b, 4, &sig), -EPROTO);
	memcpy(b, "\0\0\0\x0f", 4); /* 15 in the wrong byte order */
	assert_int_equal(agent_signal_decode(b, 4, &sig), -EPROTO);

	uint16_t rows, cols;
	agent_winsize_encode(b, 0x0102, 0x0304);
	assert_memory_equal(b, "\x02\x01\x04\x03", 4);
	assert_int_equal(agent_winsize_decode(b, 4, &rows, &cols), 0);
	assert_int_equal(rows, 0x0102);
	assert_int_equal(cols, 0x0304);
	assert_int_equal(agent_winsize_decode(b, 5, &rows, &cols), -EPROTO);

	struct agent_exit e;
	agent_exit_encode(b, 3, 0);
	assert_memory_equal(b, "\x03\0\0\0\0\0\0\0", 8);
	assert_int_equal(agent_exit_decode(b, 8, &e), 0);
	assert_int_equal(e.code, 3);
	assert_int_equal(e.signal, 0);
	agent_exit_encode(b, 0, 9);
	assert_memory_equal(b, "\xff\xff\xff\xff\x09\0\0\0", 8);
	assert_int_equal(agent_exit_decode(b, 8, &e), 0);
	assert_int_equal(e.code, -1);
	assert_int_equal(e.signal, 9);
	agent_exit_encode(b, 256, 0);
	assert_int_equal(agent_exit_decode(b, 8, &e), -EPROTO);
	agent_exit_encode(b, 0, 65);
	assert_int_equal(agent_exit_decode(b, 8, &e), -EPROTO);
	memcpy(b, "\x03\0\0\0\x01\0\0\0", 8); /* a code and a signal */
	assert_int_equal(agent_exit_decode(b, 8, &e), -EPROTO);
	assert_int_equal(agent_exit_decode(b, 7, &e), -EPROTO);
}

static void test_exec_codec(void **state)
{
	(void)state;
	char *argv[] = { "sh", "-c", "echo \"$X\"", "", NULL };
	char *env[] = { "X=1", "EMPTY=", NULL };
	long n = agent_exec_encode(buf, sizeof(buf), AGENT_EXEC_TTY, 40, 120, "/work", argv, env);
	assert_true(n > 0);
	struct agent_exec_req r;
	assert_int_equal(agent_exec_decode(buf, (size_t)n, &r), 0);
	assert_int_equal(r.flags, AGENT_EXEC_TTY);
	assert_int_equal(r.rows, 40);
	assert_int_equal(r.cols, 120);
	assert_string_equal(r.cwd, "/work");
	assert_int_equal(r.argc, 4);
	for (int i = 0; i < 4; i++)
		assert_string_equal(r.argv[i], argv[i]);
	assert_null(r.argv[4]);
	assert_int_equal(r.envc, 2);
	assert_string_equal(r.env[1], "EMPTY=");
	assert_null(r.env[2]);
	agent_exec_free(&r);

	/* Every truncation is refused, and so is a trailing byte. */
	for (long cut = 0; cut < n; cut++)
		assert_int_equal(agent_exec_decode(buf, (size_t)cut, &r), -EPROTO);
	buf[n] = 'x';
	assert_int_equal(agent_exec_decode(buf, (size_t)n + 1, &r), -EPROTO);
}

static void test_exec_rejects(void **state)
{
	(void)state;
	struct agent_exec_req r;
	char *argv[] = { "true", NULL };
	char *noenv[] = { NULL };
	char *badenv[] = { "NOEQUALS", NULL };
	long n = agent_exec_encode(buf, sizeof(buf), 0, 0, 0, "relative", argv, noenv);
	assert_int_equal(agent_exec_decode(buf, (size_t)n, &r), -EPROTO); /* cwd not absolute */
	n = agent_exec_encode(buf, sizeof(buf), 0, 0, 0, "/", argv, badenv);
	assert_int_equal(agent_exec_decode(buf, (size_t)n, &r), -EPROTO); /* env without '=' */
	n = agent_exec_encode(buf, sizeof(buf), 1u << 7, 0, 0, "/", argv, noenv);
	assert_int_equal(agent_exec_decode(buf, (size_t)n, &r), -EPROTO); /* unknown flag */
	char *none[] = { NULL };
	assert_int_equal(agent_exec_encode(buf, sizeof(buf), 0, 0, 0, "/", none, noenv), -E2BIG);
	/* A lying argc: more strings announced than present. */
	n = agent_exec_encode(buf, sizeof(buf), 0, 0, 0, "/", argv, noenv);
	size_t at = offsetof(struct agent_exec, argc);
	memcpy(buf + at, "\xe8\x03\0\0", 4); /* 1000 */
	assert_int_equal(agent_exec_decode(buf, (size_t)n, &r), -EPROTO);
	memcpy(buf + at, "\xff\xff\xff\xff", 4);
	assert_int_equal(agent_exec_decode(buf, (size_t)n, &r), -EPROTO);
	assert_int_equal(agent_exec_encode(buf, 10, 0, 0, 0, "/", argv, noenv), -E2BIG);
}

/* A template's session: what it carries comes back; every lie in it is refused. */
static void test_session_codec(void **state)
{
	(void)state;
	struct agent_session in = { .sec = 1796464497, .nsec = 999999999, .args = "bulkhead.work=rw x" };
	struct agent_session out;
	for (int i = 0; i < AGENT_SESSION_ENTROPY; i++)
		in.entropy[i] = (uint8_t)(i * 7 + 1);
	uint8_t p[AGENT_SESSION_FIXED + AGENT_SESSION_ARGS_MAX + 8];
	long n = agent_session_encode(p, sizeof(p), &in);
	assert_int_equal(n, AGENT_SESSION_FIXED + strlen(in.args) + 1);
	assert_int_equal(agent_session_decode(p, (size_t)n, &out), 0);
	assert_memory_equal(out.entropy, in.entropy, AGENT_SESSION_ENTROPY);
	assert_int_equal(out.sec, in.sec);
	assert_int_equal(out.nsec, in.nsec);
	assert_string_equal(out.args, in.args);
	/* Cut anywhere: refused (no terminator where the payload ends). */
	for (long cut = 0; cut < n; cut++)
		assert_int_equal(agent_session_decode(p, (size_t)cut, &out), -EPROTO);
	/* A NUL or a control byte inside the arguments, nanoseconds out of range, a negative
	 * time: refused. */
	uint8_t bad[sizeof(p)];
	memcpy(bad, p, (size_t)n);
	bad[AGENT_SESSION_FIXED + 3] = '\0';
	assert_int_equal(agent_session_decode(bad, (size_t)n, &out), -EPROTO);
	bad[AGENT_SESSION_FIXED + 3] = '\n';
	assert_int_equal(agent_session_decode(bad, (size_t)n, &out), -EPROTO);
	memcpy(bad, p, (size_t)n);
	bad[AGENT_SESSION_ENTROPY + 11] = 0x3c; /* nanoseconds >= 1e9 */
	assert_int_equal(agent_session_decode(bad, (size_t)n, &out), -EPROTO);
	memcpy(bad, p, (size_t)n);
	bad[AGENT_SESSION_ENTROPY + 7] = 0x80; /* seconds < 0 */
	assert_int_equal(agent_session_decode(bad, (size_t)n, &out), -EPROTO);
	/* Arguments past the command line's size, or not printable: not encoded. */
	char longer[AGENT_SESSION_ARGS_MAX + 2];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	in.args = longer;
	assert_int_equal(agent_session_encode(p, sizeof(p), &in), -E2BIG);
	longer[AGENT_SESSION_ARGS_MAX] = '\0';
	assert_true(agent_session_encode(p, sizeof(p), &in) > 0);
	in.args = "tab\there";
	assert_int_equal(agent_session_encode(p, sizeof(p), &in), -E2BIG);
	/* The parser takes a whole SESSION frame and refuses one with no arguments at all. */
	assert_int_equal(agent_check_len(AGENT_SESSION, AGENT_SESSION_FIXED), -EPROTO);
	assert_int_equal(agent_check_len(AGENT_TEMPLATE_READY, 0), 0);
	assert_int_equal(agent_check_len(AGENT_TEMPLATE_READY, 1), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad_frames),
		cmocka_unit_test(test_parse_any_split),
		cmocka_unit_test(test_half_frame_never_blocks),
		cmocka_unit_test(test_fill_is_bounded),
		cmocka_unit_test(test_fixed_payloads),
		cmocka_unit_test(test_exec_codec),
		cmocka_unit_test(test_exec_rejects),
		cmocka_unit_test(test_session_codec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
