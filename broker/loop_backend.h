/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_backend.h: what the broker's event loop (loop.c) asks of the kernel, behind one
 * interface with two implementations: io_uring (loop_uring.c) and epoll (loop_epoll.c), the
 * fallback where io_uring is missing or forbidden. Every request is one-shot and names a tag;
 * each yields exactly one event with that tag, a cancelled one included. */
#ifndef BULKHEAD_BROKER_LOOP_BACKEND_H
#define BULKHEAD_BROKER_LOOP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct loop_ev {
	uint64_t tag;
	int res; /* accept: the new socket or -errno; readable: poll events or -errno;
		  * a cancelled request: -ECANCELED */
};

struct loop_backend {
	const char *name; /* "io_uring" or "epoll" */
	/* One connection accepted on the listening socket LFD (non-blocking). */
	int (*accept)(struct loop_backend *b, int lfd, uint64_t tag);
	/* FD readable, hung up or failed. */
	int (*readable)(struct loop_backend *b, int fd, uint64_t tag);
	/* FD hung up or failed: bytes to read do not end this wait (io_uring also ends it at the
	 * peer's half close, POLLRDHUP, which the caller tells apart by the events). */
	int (*hangup)(struct loop_backend *b, int fd, uint64_t tag);
	/* Ends the request TAG on FD early: its event comes with -ECANCELED, or with what it
	 * got if that came first. */
	int (*cancel)(struct loop_backend *b, int fd, uint64_t tag);
	/* Up to MAX events, waiting at most TIMEOUT_MS for the first. Returns how many, or a
	 * negative errno. */
	int (*wait)(struct loop_backend *b, struct loop_ev *ev, int max, int timeout_ms);
	void (*free)(struct loop_backend *b);
};

/* Each returns 0 and a backend, or a negative errno with why in WHY. The io_uring ring is
 * made here, before the broker's lock-down forbids making one, and limited to the operations
 * the loop uses. */
int loop_uring_new(struct loop_backend **out, char *why, size_t whylen);
int loop_epoll_new(struct loop_backend **out, char *why, size_t whylen);

#endif
