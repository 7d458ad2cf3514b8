/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_epoll.c: the event loop's epoll backend (loop_backend.h), where io_uring is
 * missing or forbidden. Each request is a one-shot registration; an accept is made here once
 * its listener is readable; a cancel removes the registration and leaves its event for the
 * next wait, so both backends end every request the same way. */
#include "broker/loop_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* A request is an epoll registration whose data is its slot here (the descriptor's number,
 * since a descriptor carries one request at a time). */
struct req {
	uint64_t tag;
	int fd, listener, armed;
};

struct ep {
	struct loop_backend b;
	int epfd;
	struct req *reqs; /* by descriptor number */
	size_t nreqs;
	struct loop_ev *done; /* cancelled requests' events, for the next wait */
	size_t ndone, capdone;
};

/* EPOLLHUP and EPOLLERR end every wait; IN: readable bytes (and a half close) too. */
static int arm(struct ep *e, int fd, uint64_t tag, int listener, int in)
{
	struct epoll_event ee = { .events = (in ? EPOLLIN | EPOLLRDHUP : 0) | EPOLLONESHOT,
				  .data.fd = fd };

	if (fd < 0)
		return -EBADF;
	if ((size_t)fd >= e->nreqs) {
		size_t n = (size_t)fd * 2 + 64;
		struct req *r = realloc(e->reqs, n * sizeof(*r));

		if (!r)
			return -ENOMEM;
		memset(r + e->nreqs, 0, (n - e->nreqs) * sizeof(*r));
		e->reqs = r;
		e->nreqs = n;
	}
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ee) < 0 &&
	    (errno != EEXIST || epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &ee) < 0))
		return -errno;
	e->reqs[fd] = (struct req){ tag, fd, listener, 1 };
	return 0;
}

static int e_accept(struct loop_backend *b, int lfd, uint64_t tag)
{
	return arm((struct ep *)b, lfd, tag, 1, 1);
}

static int e_readable(struct loop_backend *b, int fd, uint64_t tag)
{
	return arm((struct ep *)b, fd, tag, 0, 1);
}

static int e_hangup(struct loop_backend *b, int fd, uint64_t tag)
{
	return arm((struct ep *)b, fd, tag, 0, 0);
}

static int e_cancel(struct loop_backend *b, int fd, uint64_t tag)
{
	struct ep *e = (struct ep *)b;

	if (fd < 0 || (size_t)fd >= e->nreqs || !e->reqs[fd].armed || e->reqs[fd].tag != tag)
		return 0; /* its event has already been given */
	if (e->ndone == e->capdone) {
		size_t n = e->capdone * 2 + 16;
		struct loop_ev *d = realloc(e->done, n * sizeof(*d));

		if (!d)
			return -ENOMEM;
		e->done = d;
		e->capdone = n;
	}
	epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
	e->reqs[fd].armed = 0;
	e->done[e->ndone++] = (struct loop_ev){ tag, -ECANCELED };
	return 0;
}

static int e_wait(struct loop_backend *b, struct loop_ev *ev, int max, int timeout_ms)
{
	struct ep *e = (struct ep *)b;
	struct epoll_event ee[64];
	int n = 0, k;

	while (e->ndone && n < max)
		ev[n++] = e->done[--e->ndone];
	if (n)
		timeout_ms = 0;
	k = epoll_wait(e->epfd, ee, max - n < 64 ? max - n : 64, timeout_ms);
	if (k < 0)
		return errno == EINTR ? n : (n ? n : -errno);
	for (int i = 0; i < k; i++) {
		int fd = ee[i].data.fd;
		struct req *r = &e->reqs[fd];

		if (!r->armed)
			continue;
		epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
		r->armed = 0;
		ev[n].tag = r->tag;
		if (!r->listener) {
			ev[n++].res = (int)ee[i].events;
			continue;
		}
		ev[n].res = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (ev[n].res < 0)
			ev[n].res = -errno;
		if (ev[n].res == -EAGAIN || ev[n].res == -EINTR) {
			arm(e, fd, r->tag, 1, 1); /* another took it: wait on */
			continue;
		}
		n++;
	}
	return n;
}

static void e_free(struct loop_backend *b)
{
	struct ep *e = (struct ep *)b;

	close(e->epfd);
	free(e->reqs);
	free(e->done);
	free(e);
}

int loop_epoll_new(struct loop_backend **out, char *why, size_t whylen)
{
	struct ep *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0) {
		int rc = -errno;

		snprintf(why, whylen, "epoll_create1: %s", strerror(errno));
		free(e);
		return rc;
	}
	e->b = (struct loop_backend){ "epoll",	e_accept, e_readable, e_hangup,
				      e_cancel, e_wait,	  e_free };
	*out = &e->b;
	return 0;
}
