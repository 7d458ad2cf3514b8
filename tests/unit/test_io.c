/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_io.c: the whole-read and whole-write helpers (lib/io.c) under what makes the
 * loops they replace necessary — short transfers and signals in the middle of a call — and the
 * one-line error helper (lib/errbuf.c). */
#include "lib/errbuf.h"
#include "lib/io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#define BIG (4u << 20) /* many pipe buffers: a blocking write cannot finish at once */

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 9));
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* A signal every millisecond, without SA_RESTART: blocked reads and writes return early,
 * with EINTR or a short count. */
static void interrupts_on(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static void interrupts_off(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
}

/* Reads the pipe in small, slow pieces and checks the pattern; returns the byte count. */
static void *slow_reader(void *arg)
{
	int fd = *(int *)arg;
	static uint8_t b[4096];
	size_t total = 0, bad = 0;
	ssize_t n;

	while ((n = read(fd, b, 1 + total % sizeof(b))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			bad += b[i] != pattern(total + (size_t)i);
		total += (size_t)n;
		if (total % 65536 < (size_t)n)
			usleep(200);
	}
	return (void *)(uintptr_t)(bad ? 0 : total);
}

static void test_write_full_interrupted(void **state)
{
	(void)state;
	uint8_t *big = malloc(BIG);
	int p[2];
	pthread_t t;
	void *got;

	assert_non_null(big);
	for (size_t i = 0; i < BIG; i++)
		big[i] = pattern(i);
	assert_int_equal(pipe(p), 0);
	/* The reader thread must not take the signals: block them there. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	assert_int_equal(pthread_create(&t, NULL, slow_reader, &p[0]), 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	alarms = 0;
	interrupts_on();
	assert_int_equal(io_write_full(p[1], big, BIG), 0);
	interrupts_off();
	close(p[1]);
	pthread_join(t, &got);
	assert_int_equal((uintptr_t)got, BIG); /* every byte, in order */
	assert_true(alarms > 0);	       /* and the write was interrupted meanwhile */
	close(p[0]);
	free(big);
}

static void test_writev_full_interrupted(void **state)
{
	(void)state;
	uint8_t *big = malloc(BIG);
	int p[2];
	pthread_t t;
	void *got;

	assert_non_null(big);
	for (size_t i = 0; i < BIG; i++)
		big[i] = pattern(i);
	/* Uneven pieces, empty ones among them. */
	struct iovec iov[6] = {
		{ big, 0 },
		{ big, 3 },
		{ big + 3, BIG / 2 - 3 },
		{ big + BIG / 2, 0 },
		{ big + BIG / 2, BIG / 2 - 1 },
		{ big + BIG - 1, 1 },
	};
	struct iovec copy[6];
	memcpy(copy, iov, sizeof(iov));
	assert_int_equal(pipe(p), 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	assert_int_equal(pthread_create(&t, NULL, slow_reader, &p[0]), 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	interrupts_on();
	assert_int_equal(io_writev_full(p[1], iov, 6), 0);
	interrupts_off();
	close(p[1]);
	pthread_join(t, &got);
	assert_int_equal((uintptr_t)got, BIG);
	assert_memory_equal(iov, copy, sizeof(iov)); /* the caller's array is left alone */
	close(p[0]);
	free(big);

	struct iovec many[IO_IOV_MAX + 1] = { { NULL, 0 } };
	assert_int_equal(io_writev_full(1, many, IO_IOV_MAX + 1), -EINVAL);
	assert_int_equal(io_writev_full(1, many, IO_IOV_MAX), 0); /* nothing to write */
}

/* Writes the pattern in pieces with pauses, then closes: a reader sees many short reads. */
static void *trickle_writer(void *arg)
{
	int fd = *(int *)arg;
	uint8_t b[1000];
	size_t off = 0;

	while (off < 100000) {
		size_t n = 1 + off % sizeof(b);
		for (size_t i = 0; i < n; i++)
			b[i] = pattern(off + i);
		if (write(fd, b, n) != (ssize_t)n)
			break;
		off += n;
		if (off % 7 == 0)
			usleep(100);
	}
	close(fd);
	return NULL;
}

static void test_read_full(void **state)
{
	(void)state;
	static uint8_t b[200000];
	int p[2];
	pthread_t t;

	assert_int_equal(pipe(p), 0);
	assert_int_equal(pthread_create(&t, NULL, trickle_writer, &p[1]), 0);
	/* Exactly what was asked for, though it arrives in pieces ... */
	assert_int_equal(io_read_full(p[0], b, 50000), 50000);
	/* ... and at the end of the stream, what there was. */
	ssize_t rest = io_read_full(p[0], b + 50000, sizeof(b) - 50000);
	pthread_join(t, NULL);
	assert_true(rest >= 50000);
	for (ssize_t i = 0; i < 50000 + rest; i++)
		if (b[i] != pattern((size_t)i))
			fail_msg("byte %zd differs", i);
	assert_int_equal(io_read_full(p[0], b, 10), 0);
	close(p[0]);
	assert_int_equal(io_read_full(p[0], b, 10), -EBADF);
}

static void test_pread_full(void **state)
{
	(void)state;
	char path[] = "/tmp/bulkhead-test-io.XXXXXX";
	int fd = mkstemp(path);
	uint8_t b[64];

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(io_write_full(fd, "0123456789", 10), 0);
	assert_int_equal(lseek(fd, 2, SEEK_SET), 2);
	assert_int_equal(io_pread_full(fd, b, 4, 5), 4);
	assert_memory_equal(b, "5678", 4);
	assert_int_equal(io_pread_full(fd, b, sizeof(b), 7), 3); /* short only at the end */
	assert_memory_equal(b, "789", 3);
	assert_int_equal(io_pread_full(fd, b, sizeof(b), 10), 0);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 2); /* the position did not move */
	close(fd);
}

static void test_write_errors(void **state)
{
	(void)state;
	int p[2];

	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_int_equal(io_write_full(p[1], "x", 1), -EPIPE);
	struct iovec iov = { "x", 1 };
	assert_int_equal(io_writev_full(p[1], &iov, 1), -EPIPE);
	close(p[1]);
	assert_int_equal(io_write_full(p[1], "x", 1), -EBADF);
	assert_int_equal(io_write_full(p[1], "", 0), 0); /* nothing to write: no call */
}

/* The one whole-file reader: exactly MAX bytes read whole; one more is ERANGE, not a cut
 * file; an absent file is its errno. */
static void test_read_all(void **state)
{
	(void)state;
	char path[] = "/tmp/bulkhead-io-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(io_write_full(fd, "0123456789", 10), 0);
	close(fd);
	size_t n = 0;
	char *buf = io_read_path(path, 10, &n);
	assert_non_null(buf);
	assert_int_equal(n, 10);
	assert_string_equal(buf, "0123456789");
	free(buf);
	errno = 0;
	assert_null(io_read_path(path, 9, &n));
	assert_int_equal(errno, ERANGE);
	unlink(path);
	assert_null(io_read_path(path, 10, NULL));
	assert_int_equal(errno, ENOENT);
	int p[2];
	assert_int_equal(pipe(p), 0);
	close(p[1]);
	buf = io_read_all(p[0], 4, &n); /* an empty stream: "" */
	assert_non_null(buf);
	assert_int_equal(n, 0);
	assert_string_equal(buf, "");
	free(buf);
	close(p[0]);
}

static void test_errbuf(void **state)
{
	(void)state;
	char err[8] = "unset";

	assert_int_equal(errbuf_fail(err, sizeof(err), -EINVAL, "bad %s", "value"), -EINVAL);
	assert_string_equal(err, "bad val"); /* cut to the buffer, always terminated */
	assert_int_equal(errbuf_fail(NULL, 0, -2, "no buffer"), -2);
	errbuf_set(err, 0, "not written");
	assert_string_equal(err, "bad val");
	errbuf_set(err, sizeof(err), "%d", 42);
	assert_string_equal(err, "42");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_full_interrupted),
		cmocka_unit_test(test_writev_full_interrupted),
		cmocka_unit_test(test_read_full),
		cmocka_unit_test(test_pread_full),
		cmocka_unit_test(test_write_errors),
		cmocka_unit_test(test_read_all),
		cmocka_unit_test(test_errbuf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
