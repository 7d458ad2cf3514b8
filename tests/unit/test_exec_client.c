/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_exec_client.c: the host side of one exec (session/exec_client.c) against a fake
 * vsock back end on a real Unix socket: the handshake and its deadline, the EXEC frame, output
 * relayed and the exit status, the ~. escape of -it. Driven by a poll loop as the session's. */
#include "session/exec_client.h"
#include "lib/agent_proto.h"
#include "lib/unix_listen.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

static char sock_path[64];
static int lfd;
static struct exec_client c;

static int setup(void **state)
{
	(void)state;
	snprintf(sock_path, sizeof(sock_path), "/tmp/test-exec-client.%d.sock", (int)getpid());
	unlink(sock_path);
	lfd = unix_listen(sock_path, 4, false);
	assert_true(lfd >= 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(lfd);
	unlink(sock_path);
	return 0;
}

/* One turn of the caller's loop: poll (at most wait_ms) and handle. */
static int turn(int wait_ms)
{
	struct pollfd pfd[EXEC_CLIENT_POLLFDS];
	int n = exec_client_pollfds(&c, pfd);
	int t = exec_client_timeout_ms(&c);
	poll(pfd, (nfds_t)n, t >= 0 && t < wait_ms ? t : wait_ms);
	return exec_client_handle(&c, pfd, n);
}

static int open_client(int in_fd, int out_fd, int handshake_ms)
{
	char *argv[] = { "echo", "hi", NULL };
	char *env[] = { "A=1", NULL };
	memset(&c, 0, sizeof(c));
	c.in_fd = in_fd;
	c.out_fd = out_fd;
	c.err_fd = out_fd;
	return exec_client_open(&c, sock_path, AGENT_PORT, handshake_ms, AGENT_EXEC_STDIN, 0, 0,
				"/work", argv, env);
}

/* The fake back end's side: accept, read the CONNECT line, answer it. */
static int serve_handshake(const char *reply)
{
	int fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	char line[32];
	size_t got = 0;
	while (got < sizeof(line) - 1) {
		(void)turn(10); /* the client sends its line when poll lets it */
		ssize_t n = recv(fd, line + got, sizeof(line) - 1 - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
		if (got && line[got - 1] == '\n')
			break;
	}
	line[got] = '\0';
	assert_string_equal(line, "CONNECT 1024\n");
	if (reply)
		assert_int_equal(write(fd, reply, strlen(reply)), (ssize_t)strlen(reply));
	return fd;
}

static void test_exec_relays_output_and_exit(void **state)
{
	(void)state;
	int out[2];
	assert_int_equal(pipe(out), 0);
	assert_int_equal(open_client(-1, out[1], 5000), 0);
	int fd = serve_handshake("OK 1234\n");
	for (int i = 0; i < 20 && c.state == EXEC_HANDSHAKE; i++)
		assert_int_equal(turn(50), 0);
	assert_int_equal(c.state, EXEC_RUNNING);
	/* The EXEC frame arrives whole and decodes to what was asked. */
	static struct agent_reader rd;
	agent_reader_init(&rd, AGENT_MAX_PAYLOAD);
	int t = -EAGAIN;
	for (int i = 0; i < 50 && t == -EAGAIN; i++) {
		(void)turn(10);
		(void)agent_reader_fill(&rd, fd);
		t = agent_reader_next(&rd);
	}
	assert_int_equal(t, AGENT_EXEC);
	struct agent_exec_req req;
	assert_int_equal(agent_exec_decode(rd.p.payload, rd.p.len, &req), 0);
	assert_string_equal(req.argv[1], "hi");
	assert_string_equal(req.env[0], "A=1");
	assert_string_equal(req.cwd, "/work");
	agent_exec_free(&req);
	/* Output, then the status, in one burst. */
	uint8_t ex[AGENT_EXIT_LEN];
	agent_exit_encode(ex, 7, 0);
	assert_int_equal(agent_send(fd, AGENT_STDOUT, "out put", 7), 0);
	assert_int_equal(agent_send(fd, AGENT_EXIT, ex, sizeof(ex)), 0);
	int rc = 0;
	for (int i = 0; i < 50 && rc == 0; i++)
		rc = turn(50);
	assert_int_equal(rc, 1);
	assert_int_equal(c.exit.code, 7);
	char buf[16];
	assert_int_equal(read(out[0], buf, sizeof(buf)), 7);
	assert_memory_equal(buf, "out put", 7);
	exec_client_close(&c);
	close(fd);
	close(out[0]);
	close(out[1]);
}

static void test_handshake_deadline(void **state)
{
	(void)state;
	assert_int_equal(open_client(-1, 1, 200), 0);
	int fd = serve_handshake(NULL); /* the guest never answers */
	int rc = 0;
	for (int i = 0; i < 100 && rc == 0; i++)
		rc = turn(50);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(c.error, "timed out"));
	exec_client_close(&c);
	close(fd);
}

static void test_bad_reply(void **state)
{
	(void)state;
	assert_int_equal(open_client(-1, 1, 5000), 0);
	int fd = serve_handshake("NO\n");
	int rc = 0;
	for (int i = 0; i < 50 && rc == 0; i++)
		rc = turn(50);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(c.error, "unexpected reply"));
	exec_client_close(&c);
	close(fd);
}

/* -it: "~." at the start of a line is ours; "~~" sends one "~"; mid-line "~" is the guest's. */
static void test_escape(void **state)
{
	(void)state;
	int in[2];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(open_client(in[0], 1, 5000), 0);
	c.escapes = true;
	int fd = serve_handshake("OK 1\n");
	for (int i = 0; i < 20 && c.state == EXEC_HANDSHAKE; i++)
		(void)turn(50);
	assert_int_equal(write(in[1], "a~b\r~~c\r", 8), 8);
	int rc = 0;
	for (int i = 0; i < 20; i++)
		rc = turn(20);
	assert_int_equal(rc, 0);
	static struct agent_reader rd;
	agent_reader_init(&rd, AGENT_MAX_PAYLOAD);
	char got[64];
	size_t n = 0;
	(void)agent_reader_fill(&rd, fd);
	for (int t; (t = agent_reader_next(&rd)) > 0;)
		if (t == AGENT_STDIN) {
			memcpy(got + n, rd.p.payload, rd.p.len);
			n += rd.p.len;
		}
	assert_int_equal(n, 7);
	assert_memory_equal(got, "a~b\r~c\r", 7);
	assert_int_equal(write(in[1], "~.", 2), 2);
	for (int i = 0; i < 20 && rc == 0; i++)
		rc = turn(20);
	assert_int_equal(rc, 2);
	exec_client_close(&c);
	close(fd);
	close(in[0]);
	close(in[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_relays_output_and_exit),
		cmocka_unit_test(test_handshake_deadline),
		cmocka_unit_test(test_bad_reply),
		cmocka_unit_test(test_escape),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
