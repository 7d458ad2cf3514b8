/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/stopwait.c: waits that end with the VM (see stopwait.h). The stop eventfd is written
 * once and never read, so it stays readable from the stop request on. */
#include "vmm/stopwait.h"

#include "lib/mono.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <unistd.h>

int stopwait_fd(struct vm_stop *stop, int fd, short events)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = events },
				       { .fd = stop ? stop->fd : -1, .events = POLLIN } };
		int timeout = -1;
		if (stop && vm_stopping(stop)) {
			/* Stopping: only the grace remains, measured from the request itself so
			 * that many waits in a row cannot add up. */
			uint64_t end = atomic_load(&stop->ns) + STOPWAIT_GRACE_MS * 1000000ull;
			uint64_t now = mono_ns();
			timeout = now >= end ? 0 : (int)((end - now + 999999) / 1000000);
			p[1].fd = -1;
		}
		int n = poll(p, 2, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue; /* a kick: the loop recomputes what is left */
			return -errno;
		}
		if (p[0].revents)
			return 1;
		if (n == 0)
			return 0;
		/* The stop eventfd became readable: go round once more, now with the grace. */
	}
}

size_t stopwait_write(struct vm_stop *stop, int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;

	while (done < len) {
		if (stopwait_fd(stop, fd, POLLOUT) <= 0)
			break;
		size_t chunk = len - done < PIPE_BUF ? len - done : PIPE_BUF;
		ssize_t n = write(fd, p + done, chunk);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* the reader is gone */
		done += (size_t)n;
	}
	return done;
}
