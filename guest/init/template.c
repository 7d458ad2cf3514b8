/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/template.c: a template's wait for its session.
 *
 * Booted with bulkhead.template=1, init has set up only what every session shares (the
 * kernel, /proc, /sys, /dev, tmpfs): no share mounted, no CA fetched, no command run, and no
 * random number drawn by user space. It listens on TEMPLATE_PORT, says so on the ready port
 * (AGENT_TEMPLATE_READY), and blocks in accept: that is where the host saves the VM. Every
 * guest restored from the snapshot wakes there, all of them with the same kernel generator
 * state and a wall clock as old as the snapshot, until its host connects and sends one
 * SESSION frame (lib/agent_proto.h), answered with READY once applied:
 *   - the host's entropy is credited to the kernel's pool and the generator reseeded
 *     (RNDADDENTROPY, RNDRESEEDCRNG), before any program of the session starts;
 *   - the wall clock is set to the host's (the monotonic clock went on from the save);
 *   - the session's boot arguments stand in for the kernel command line from then on.
 * Only then does init mount the session's shares, fetch its CA and serve its commands. */
#include "guest/init/init.h"
#include "lib/agent_proto.h"
#include "lib/boot_args.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Reads the one SESSION frame of connection c (10 s for all of it, once connected). */
static int read_session(int c, struct agent_session *s)
{
	static struct agent_reader rd; /* large: not on the stack */
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	agent_reader_init(&rd, AGENT_SESSION_FIXED + AGENT_SESSION_ARGS_MAX + 1);
	for (;;) {
		int t = agent_reader_next(&rd);
		if (t == AGENT_SESSION)
			return agent_session_decode(rd.p.payload, rd.p.len, s);
		if (t == 0)
			return -ECONNRESET; /* ended before a frame: the host tries again */
		if (t != -EAGAIN)
			return t < 0 ? t : -EPROTO; /* another frame, or a cut one (-EIO) */
		long n = agent_reader_fill(&rd, c);
		if (n < 0 && n != -EAGAIN)
			return (int)n;
		if (n == -EAGAIN)
			return -ETIMEDOUT; /* SO_RCVTIMEO ran out */
	}
}

/* The host's entropy into the kernel's pool, credited, and the generator reseeded from it:
 * from here on no two guests of one template draw the same numbers. */
static int reseed(const uint8_t *entropy)
{
	struct {
		struct rand_pool_info info;
		uint8_t buf[AGENT_SESSION_ENTROPY];
	} e = { .info = { .entropy_count = AGENT_SESSION_ENTROPY * 8,
			  .buf_size = AGENT_SESSION_ENTROPY } };
	memcpy(e.buf, entropy, AGENT_SESSION_ENTROPY);
	int fd = open("/dev/urandom", O_RDWR | O_CLOEXEC);
	int rc = fd < 0 || ioctl(fd, RNDADDENTROPY, &e) < 0 || ioctl(fd, RNDRESEEDCRNG) < 0 ? -errno
											    : 0;
	if (fd >= 0)
		close(fd);
	explicit_bzero(&e, sizeof(e));
	return rc;
}

static int apply(const struct agent_session *s)
{
	int rc = reseed(s->entropy);
	if (rc < 0) {
		console_error("bulkhead-init: template: cannot reseed the kernel's generator: %s",
			      strerror(-rc));
		return rc;
	}
	struct timespec now = { .tv_sec = s->sec, .tv_nsec = s->nsec };
	if (clock_settime(CLOCK_REALTIME, &now) < 0) {
		rc = -errno;
		console_error("bulkhead-init: template: cannot set the clock: %s", strerror(errno));
		return rc;
	}
	if ((rc = cmdline_replace(s->args)) < 0)
		console_error("bulkhead-init: template: the session's arguments do not fit");
	return rc;
}

int template_wait(void)
{
	const char *v;
	size_t len;
	if (cmdline_param(BOOT_ARGS_TEMPLATE, &v, &len) <= 0 || len != 1 || *v != '1')
		return 0;
	int lfd = vsock_listen(TEMPLATE_PORT);
	if (lfd < 0) {
		console_error("bulkhead-init: template: cannot listen on vsock port %d: %s",
			      TEMPLATE_PORT, strerror(-lfd));
		return lfd;
	}
	int ready = vsock_connect_host(AGENT_READY_PORT);
	if (ready < 0 || agent_send(ready, AGENT_TEMPLATE_READY, NULL, 0) < 0) {
		int e = ready < 0 ? -ready : errno;
		console_error("bulkhead-init: template: cannot reach the host on vsock port %d: %s",
			      AGENT_READY_PORT, strerror(e));
		close(lfd);
		return -e;
	}
	close(ready);
	/* Saved here. A restored guest's host connects and sends its session. A connection that
	 * fails before its frame is whole (the restore's transport reset can still end one made
	 * just after it) is dropped: the host tries again. */
	struct agent_session s;
	int c, rc;
	for (;;) {
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0 && errno == EINTR)
			continue;
		if (c < 0) {
			int e = errno;
			console_error("bulkhead-init: template: accept on vsock port %d: %s",
				      TEMPLATE_PORT, strerror(e));
			close(lfd);
			return -e;
		}
		rc = read_session(c, &s);
		if (rc != -ENOTCONN && rc != -ECONNRESET && rc != -EIO)
			break;
		close(c);
	}
	close(lfd);
	if (rc < 0) {
		close(c);
		console_error("bulkhead-init: template: no valid session from the host: %s",
			      strerror(-rc));
		return rc;
	}
	rc = apply(&s);
	explicit_bzero(&s, sizeof(s));
	/* Taken: the host waits for this before it lets go of the connection. */
	if (rc == 0)
		agent_send(c, AGENT_READY, NULL, 0);
	close(c);
	return rc < 0 ? rc : 1;
}
