/* SPDX-License-Identifier: Apache-2.0 */
/* session/out.c: non-blocking stdout and stderr for a session (see out.h). */
#include "session/out.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/mono.h"

static bool stalled; /* a message was dropped: later ones do not wait */

/* Writes buf, waiting at most wait_ms in all for room; returns the bytes written. */
static size_t write_within(int fd, const char *buf, size_t len, int wait_ms)
{
	long deadline = mono_ms() + wait_ms;
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
		long left = deadline - mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
	}
	return done;
}

size_t out_try(int fd, const void *buf, size_t len)
{
	return write_within(fd, buf, len, 0);
}

/* stderr's writes: whole messages if the reader makes room in time, else dropped. stdio
 * is told they were written, so a dropped message never sets the stream's error. */
static ssize_t stderr_write(void *cookie, const char *buf, size_t len)
{
	(void)cookie;
	if (write_within(2, buf, len, stalled ? 0 : OUT_MESSAGE_WAIT_MS) < len)
		stalled = true;
	return (ssize_t)len;
}

/* A descriptor of our own on what fd refers to, non-blocking; pipes and terminals only (a
 * regular file never waits, and a second description of it would have its own offset). */
static void unblock_fd(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))
		return;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fl & O_NONBLOCK)
		return;
	char path[32];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int nfd = open(path, (fl & (O_ACCMODE | O_APPEND)) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (nfd < 0)
		return; /* no /proc, or a socket: keep the blocking one */
	dup2(nfd, fd);
	close(nfd);
}

void out_unblock(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	fflush(stdout);
	fflush(stderr);
	unblock_fd(1);
	unblock_fd(2);
	static const cookie_io_functions_t io = { .write = stderr_write };
	FILE *f = fopencookie(NULL, "w", io);
	if (f) {
		setvbuf(f, NULL, _IONBF, 0);
		stderr = f;
	}
}
