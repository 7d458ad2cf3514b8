/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_unix_listen.c: listening sockets made here or adopted by number, and
 * connections to them. */
#include "lib/unix_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

static void test_listen_and_adopt(void **state)
{
	(void)state;
	char dir[] = "/tmp/bulkhead-ul.XXXXXX", path[64], num[16];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	int fd = unix_listen(path, 4, false);
	assert_true(fd > 2);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	fcntl(fd, F_SETFD, 0); /* as a launcher passes it */
	snprintf(num, sizeof(num), "%d", fd);
	assert_int_equal(unix_listen_adopt(num, true), fd);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_int_equal(unix_listen(path, 4, false), -EADDRINUSE); /* the path is taken */
	close(fd);
	unlink(path);
	rmdir(dir);
}

static void test_adopt_rejects(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "x", "3x", " 3", "+3", "-3", "0", "2", "99999999999"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(unix_listen_adopt(bad[i], false), -EINVAL);
	char num[16];
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	snprintf(num, sizeof(num), "%d", sv[0]);
	assert_int_equal(unix_listen_adopt(num, false), -ENOTSOCK); /* a socket, not listening */
	int f = open("/dev/null", O_RDONLY);
	snprintf(num, sizeof(num), "%d", f);
	assert_int_equal(unix_listen_adopt(num, false), -ENOTSOCK); /* not a socket */
	close(f);
	assert_int_equal(unix_listen_adopt(num, false), -EBADF); /* closed */
	close(sv[0]);
	close(sv[1]);
	char longpath[200];
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(unix_listen(longpath, 1, false), -ENAMETOOLONG);
}

static void test_connect(void **state)
{
	(void)state;
	char dir[] = "/tmp/bulkhead-ul.XXXXXX", path[64], longpath[200];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	assert_int_equal(unix_connect(path, false), -ENOENT); /* nobody listens yet */
	int lfd = unix_listen(path, 4, false);
	assert_true(lfd > 2);
	int c = unix_connect(path, true);
	assert_true(c > 2);
	assert_true(fcntl(c, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(c, F_GETFL) & O_NONBLOCK);
	int a = accept(lfd, NULL, NULL);
	assert_true(a >= 0);
	assert_int_equal(write(c, "x", 1), 1); /* really connected to that listener */
	char ch = 0;
	assert_int_equal(read(a, &ch, 1), 1);
	assert_int_equal(ch, 'x');
	close(a);
	close(c);
	c = unix_connect(path, false);
	assert_true(c > 2);
	assert_false(fcntl(c, F_GETFL) & O_NONBLOCK);
	close(c);
	close(lfd);
	unlink(path);
	rmdir(dir);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(unix_connect(longpath, false), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_and_adopt),
		cmocka_unit_test(test_adopt_rejects),
		cmocka_unit_test(test_connect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
