/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_uring.c: the event loop's io_uring backend (loop_backend.h), on liburing. The
 * ring starts disabled, takes a restriction list (accept, poll, cancel: nothing that opens,
 * reads or writes a file, since io_uring's operations pass beside seccomp), and only then is
 * enabled; no further registration is allowed. */
#include "broker/loop_backend.h"
#include "broker/loop.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>

#define RING_ENTRIES 1024
#define CANCEL_TAG   0 /* a cancel's own completion: nothing waits for it */

struct uring {
	struct loop_backend b;
	struct io_uring ring;
};

static struct io_uring_sqe *sqe_get(struct uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	if (!sqe) { /* the queue is full: hand it to the kernel and take a slot */
		io_uring_submit(&u->ring);
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

static int u_accept(struct loop_backend *b, int lfd, uint64_t tag)
{
	struct io_uring_sqe *sqe = sqe_get((struct uring *)b);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

static int poll_for(struct loop_backend *b, int fd, uint64_t tag, unsigned events)
{
	struct io_uring_sqe *sqe = sqe_get((struct uring *)b);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, fd, events);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

static int u_readable(struct loop_backend *b, int fd, uint64_t tag)
{
	return poll_for(b, fd, tag, POLLIN | POLLRDHUP);
}

static int u_hangup(struct loop_backend *b, int fd, uint64_t tag)
{
	return poll_for(b, fd, tag, POLLHUP | POLLERR);
}

static int u_cancel(struct loop_backend *b, int fd, uint64_t tag)
{
	struct io_uring_sqe *sqe = sqe_get((struct uring *)b);

	(void)fd;
	if (!sqe)
		return -EBUSY;
	io_uring_prep_cancel64(sqe, tag, 0);
	io_uring_sqe_set_data64(sqe, CANCEL_TAG);
	return 0;
}

static int u_wait(struct loop_backend *b, struct loop_ev *ev, int max, int timeout_ms)
{
	struct uring *u = (struct uring *)b;
	struct __kernel_timespec ts = { .tv_sec = timeout_ms / 1000,
					.tv_nsec = (long)(timeout_ms % 1000) * 1000000 };
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	int n = 0;
	int rc = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);

	if (rc < 0 && rc != -ETIME && rc != -EINTR)
		return rc;
	io_uring_for_each_cqe(&u->ring, head, cqe)
	{
		if (n == max)
			break;
		seen++;
		if (cqe->user_data == CANCEL_TAG)
			continue;
		ev[n].tag = cqe->user_data;
		ev[n].res = cqe->res;
		n++;
	}
	io_uring_cq_advance(&u->ring, seen);
	return n;
}

static void u_free(struct loop_backend *b)
{
	struct uring *u = (struct uring *)b;

	io_uring_queue_exit(&u->ring);
	free(u);
}

int loop_uring_new(struct loop_backend **out, char *why, size_t whylen)
{
	struct uring *u = calloc(1, sizeof(*u));
	struct io_uring_params p = { .flags = IORING_SETUP_R_DISABLED };
	struct io_uring_restriction allow[] = {
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_ACCEPT },
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_POLL_ADD },
		{ .opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_ASYNC_CANCEL },
	};
	int rc;

	if (!u) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	rc = io_uring_queue_init_params(RING_ENTRIES, &u->ring, &p);
	if (rc < 0) {
		snprintf(why, whylen, "io_uring_setup: %s", strerror(-rc));
		free(u);
		return rc;
	}
	/* Debian's liburing 2.3 declares io_uring_register_restrictions and io_uring_enable_rings
	 * but does not export them: the two registrations are made directly. */
	rc = (int)syscall(__NR_io_uring_register, u->ring.ring_fd, IORING_REGISTER_RESTRICTIONS,
			  allow, sizeof(allow) / sizeof(allow[0]));
	if (!rc)
		rc = (int)syscall(__NR_io_uring_register, u->ring.ring_fd,
				  IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (rc < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(why, whylen, "io_uring restrictions: %s", strerror(-rc));
		io_uring_queue_exit(&u->ring);
		free(u);
		return rc;
	}
	u->b = (struct loop_backend){ "io_uring", u_accept, u_readable, u_hangup,
				      u_cancel,	  u_wait,   u_free };
	*out = &u->b;
	return 0;
}

/* Here rather than in loop.c, so that `bulkhead doctor` asks without linking the proxy. */
const char *loop_probe(char *why, size_t whylen)
{
	struct loop_backend *b;

	if (loop_uring_new(&b, why, whylen) < 0)
		return "epoll";
	b->free(b);
	why[0] = '\0';
	return "io_uring";
}
