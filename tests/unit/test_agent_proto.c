/* tests/unit/test_agent_proto.c: the exec agent's frame reader/writer and EXEC codec. */
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

static char buf[AGENT_MAX_PAYLOAD];

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
}

static void test_round_trip(void **state)
{
	(void)state;
	int sv[2];
	pair(sv);
	uint32_t sig = 2;
	assert_int_equal(agent_send(sv[0], AGENT_STDOUT, "hello", 5), 0);
	assert_int_equal(agent_send(sv[0], AGENT_STDIN, NULL, 0), 0);
	assert_int_equal(agent_send(sv[0], AGENT_SIGNAL, &sig, sizeof(sig)), 0);
	size_t len;
	assert_int_equal(agent_recv(sv[1], buf, sizeof(buf), &len), AGENT_STDOUT);
	assert_int_equal(len, 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(agent_recv(sv[1], buf, sizeof(buf), &len), AGENT_STDIN);
	assert_int_equal(len, 0);
	assert_int_equal(agent_recv(sv[1], buf, sizeof(buf), &len), AGENT_SIGNAL);
	close(sv[0]);
	assert_int_equal(agent_recv(sv[1], buf, sizeof(buf), &len), 0); /* clean end of stream */
	close(sv[1]);
}

/* Raw header bytes the reader must refuse. */
static void expect_recv(const void *bytes, size_t n, int want)
{
	int sv[2];
	pair(sv);
	assert_int_equal(write(sv[0], bytes, n), (ssize_t)n);
	close(sv[0]);
	size_t len;
	assert_int_equal(agent_recv(sv[1], buf, sizeof(buf), &len), want);
	close(sv[1]);
}

static void test_bad_frames(void **state)
{
	(void)state;
	struct agent_hdr h = { .version = 2, .type = AGENT_STDOUT, .len = 0 };
	expect_recv(&h, sizeof(h), -EPROTO); /* wrong version */
	h = (struct agent_hdr){ .version = 1, .type = 99, .len = 0 };
	expect_recv(&h, sizeof(h), -EPROTO); /* unknown type */
	h = (struct agent_hdr){ .version = 1, .type = AGENT_STDOUT, .len = AGENT_MAX_PAYLOAD + 1 };
	expect_recv(&h, sizeof(h), -EPROTO); /* oversized */
	h = (struct agent_hdr){ .version = 1, .type = AGENT_SIGNAL, .len = 3 };
	expect_recv(&h, sizeof(h), -EPROTO); /* wrong length for the type */
	h = (struct agent_hdr){ .version = 1, .type = AGENT_EXIT, .len = 9 };
	expect_recv(&h, sizeof(h), -EPROTO);
	h = (struct agent_hdr){ .version = 1, .type = AGENT_STDOUT, .reserved = 1, .len = 0 };
	expect_recv(&h, sizeof(h), -EPROTO); /* reserved bits set */
	h = (struct agent_hdr){ .version = 1, .type = AGENT_STDOUT, .len = 10 };
	expect_recv(&h, sizeof(h), -EIO);				/* payload cut short */
	expect_recv(&h, 3, -EIO);					/* header cut short */
	assert_int_equal(agent_send(0, AGENT_SIGNAL, buf, 3), -EINVAL); /* writer checks too */
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
	struct agent_exec e;
	memcpy(&e, buf, sizeof(e));
	e.argc = 1000;
	memcpy(buf, &e, sizeof(e));
	assert_int_equal(agent_exec_decode(buf, (size_t)n, &r), -EPROTO);
	e.argc = 0xffffffffu;
	memcpy(buf, &e, sizeof(e));
	assert_int_equal(agent_exec_decode(buf, (size_t)n, &r), -EPROTO);
	assert_int_equal(agent_exec_encode(buf, 10, 0, 0, 0, "/", argv, noenv), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad_frames),
		cmocka_unit_test(test_exec_codec),
		cmocka_unit_test(test_exec_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
