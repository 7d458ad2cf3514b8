/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/main.c: bulkhead-vsock — acquire the sockets, lock down, then one epoll loop serving the
 * vhost-user front end, the guest's kicks and the host-side Unix sockets until the front end
 * goes away; release. Options are parsed in options.c. */
#include "lib/jail_selftest.h"
#include "lib/stdfds.h"
#include "lib/unix_listen.h"
#include "vsock/backend.h"
#include "vsock/conn.h"
#include "vsock/options.h"
#include "vsock/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define VSOCK_TAG_SIGNAL 9

/* Listens on path, replacing a stale socket from an earlier run (never any other kind of
 * file). The socket appears under its name only once it listens (bound and listening under
 * a temporary name, then renamed): whoever sees the path can connect at once. */
static int listen_path(const char *path)
{
	char tmp[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		errno = EEXIST;
		return -1;
	}
	int n = snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	bool atomic = n > 0 && (size_t)n < sizeof(tmp);
	unlink(atomic ? tmp : path);
	int fd = unix_listen(atomic ? tmp : path, 64, true);
	if (fd >= 0 && atomic && rename(tmp, path) < 0) {
		int err = errno;
		unlink(tmp);
		close(fd);
		fd = -err;
	}
	if (fd < 0)
		errno = -fd;
	return fd < 0 ? -1 : fd;
}

static int ep_add(int ep, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void print_stats(const struct vsock_dev *d, const struct backend *b)
{
	const struct vsock_stats *s = &d->st;
	fprintf(stderr,
		"bulkhead-vsock: connections %" PRIu64 " resets %" PRIu64 " refused %" PRIu64
		" bad: chain %" PRIu64 " addr %" PRIu64 " type %" PRIu64 " len %" PRIu64
		" op %" PRIu64 " state %" PRIu64 " credit %" PRIu64 " unknown-conn %" PRIu64
		" handshake %" PRIu64 " rst-dropped %" PRIu64 " ring-errors %" PRIu64 "/%" PRIu64
		" requests %" PRIu64 "\n",
		s->connections, s->resets, s->refused, s->bad_chain, s->bad_addr, s->bad_type,
		s->bad_len, s->bad_op, s->bad_state, s->bad_credit, s->unknown_conn,
		s->bad_handshake, s->rst_dropped, d->q[VSOCK_Q_RX].errors, d->q[VSOCK_Q_TX].errors,
		b->bad_requests);
}

/* One front-end message. Returns 1 to go on, 0 for an orderly end, -1 for a failure. */
static int on_ctrl(struct backend *b, int sock)
{
	struct vhost_user_msg m;
	int err = vhost_user_recv(sock, &m, VHOST_USER_TO_BACKEND, false, NULL);
	if (err == -ECONNRESET)
		return 0;
	if (err < 0) {
		fprintf(stderr, "bulkhead-vsock: bad message from the front end: %s\n",
			strerror(-err));
		return -1;
	}
	uint64_t status = 0;
	err = backend_handle(b, sock, &m, &status);
	vhost_user_msg_close_fds(&m);
	bool has_reply = vhost_user_has_reply(m.hdr.request);
	if (err == 0 && status && has_reply)
		err = -EOPNOTSUPP; /* a GET we cannot answer would hang the front end */
	/* A request with its own reply already had it; an ack too would be one message extra. */
	if (err == 0 && !has_reply)
		err = vhost_user_reply_ack(sock, &m, status);
	if (err < 0) {
		const char *name = vhost_user_request_name(m.hdr.request);
		fprintf(stderr, "bulkhead-vsock: front end request %s failed: %s\n",
			name ? name : "?", strerror(-err));
		return -1;
	}
	return 1;
}

/* What the process holds, acquired in order (acquire), locked down, served, released. */
struct vsock_main {
	const struct vsock_opts *o;
	int ep, sfd, lfd, hfd, ctrl;
	struct vsock_dev dev;
	struct backend b;
};

/* Signals, the event loop, the front end's listener and the host's: everything is open before
 * the allow-list goes on. Returns 0, or the exit status after one line on stderr. */
static int acquire(struct vsock_main *v)
{
	const struct vsock_opts *o = v->o;
	/* The launcher owns our lifetime: if it dies, so do we (and check it did not already).
	 * As pid 1 of the jail's PID namespace a SIGTERM without a handler would be ignored:
	 * then the launcher's death kills us outright. */
	pid_t parent = getppid();
	if (prctl(PR_SET_PDEATHSIG, getpid() == 1 ? SIGKILL : SIGTERM) < 0 || getppid() != parent)
		return 1;

	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	v->ep = epoll_create1(EPOLL_CLOEXEC);
	v->sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	v->lfd = o->given_fd ? unix_listen_adopt(o->given_fd, true) : listen_path(o->sock_path);
	if (o->given_fd && v->lfd < 0) {
		errno = -v->lfd;
		v->lfd = -1;
	}
	if (v->ep < 0 || v->sfd < 0 || v->lfd < 0) {
		fprintf(stderr, "bulkhead-vsock: cannot listen on %s: %s\n",
			o->sock_path ? o->sock_path : "the given descriptor", strerror(errno));
		return 1;
	}
	v->hfd = listen_path(o->uds);
	if (v->hfd < 0) {
		fprintf(stderr, "bulkhead-vsock: cannot listen on %s: %s\n", o->uds,
			strerror(errno));
		if (o->sock_path)
			unlink(o->sock_path);
		return 1;
	}
	vsock_dev_init(&v->dev, o->cid, o->uds, v->ep);
	v->b = (struct backend){ .dev = &v->dev };
	v->ctrl = -1;
	if (ep_add(v->ep, v->sfd, VSOCK_TAG(VSOCK_TAG_SIGNAL, 0)) < 0 ||
	    ep_add(v->ep, v->lfd, VSOCK_TAG(VSOCK_TAG_LISTEN, 0)) < 0 ||
	    ep_add(v->ep, v->hfd, VSOCK_TAG(VSOCK_TAG_LISTEN, 1)) < 0) {
		fprintf(stderr, "bulkhead-vsock: epoll: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* Set up: from here on only the allow-list's calls, before the front end's first message and
 * so before any guest byte. */
static int lock_down(const struct vsock_main *v)
{
	if (v->o->selftest)
		jail_selftest_report();
	if (!v->o->no_seccomp) {
		int err = vsock_seccomp_install();
		if (err < 0) {
			fprintf(stderr, "bulkhead-vsock: cannot install the seccomp filter: %s\n",
				strerror(-err));
			return 1;
		}
	}
	if (v->o->selftest)
		jail_selftest_probe();
	return 0;
}

/* The one front end connects; later ones are refused. */
static void accept_front_end(struct vsock_main *v)
{
	int fd = accept4(v->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (v->ctrl >= 0) {
		close(fd);
		return;
	}
	v->ctrl = fd;
	/* A front end stalling mid-message must not freeze the guest's traffic for long: reads
	 * time out (then we exit, non-zero). */
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(v->ctrl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ep_add(v->ep, v->ctrl, VSOCK_TAG(VSOCK_TAG_CTRL, 0));
}

/* One event. Returns -1 to go on, or the exit status. */
static int on_event(struct vsock_main *v, const struct epoll_event *ev)
{
	uint32_t kind = (uint32_t)(ev->data.u64 >> 32);
	uint32_t idx = (uint32_t)ev->data.u64;

	if (kind == VSOCK_TAG_SIGNAL) {
		return 0; /* asked to stop: an orderly end */
	} else if (kind == VSOCK_TAG_LISTEN && idx == 0) {
		accept_front_end(v);
	} else if (kind == VSOCK_TAG_LISTEN) {
		int fd;
		while ((fd = accept4(v->hfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
			vsock_host_accept(&v->dev, fd);
	} else if (kind == VSOCK_TAG_CTRL) {
		int r = on_ctrl(&v->b, v->ctrl);
		if (r <= 0)
			return r == 0 ? 0 : 1;
	} else if (kind == VSOCK_TAG_KICK && idx < VSOCK_NQUEUES) {
		uint64_t n;
		if (read(v->dev.q[idx].kick_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
			return -1;
		vsock_kick(&v->dev);
	} else if (kind == VSOCK_TAG_CONN) {
		vsock_host_event(&v->dev, idx, ev->events);
	}
	return -1;
}

/* The loop, until a signal, the front end's end or a failure. Returns the exit status. */
static int serve(struct vsock_main *v)
{
	int rc = -1;

	while (rc < 0) {
		struct epoll_event evs[64];
		int n = epoll_wait(v->ep, evs, 64, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "bulkhead-vsock: epoll_wait: %s\n", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n && rc < 0; i++)
			rc = on_event(v, &evs[i]);
	}
	return rc;
}

static void release(struct vsock_main *v)
{
	if (v->o->verbose)
		print_stats(&v->dev, &v->b);
	vsock_dev_reset(&v->dev);
	if (v->o->sock_path)
		unlink(v->o->sock_path);
	unlink(v->o->uds);
}

int main(int argc, char **argv)
{
	static struct vsock_main v; /* the device is large: not on the stack */
	struct vsock_opts o;
	if (stdfds_ensure() < 0) {
		fprintf(stderr, "bulkhead-vsock: descriptor 0, 1 or 2 is closed and /dev/null cannot "
				"take its place\n");
		return 1;
	}
	int rc = vsock_options_parse(argc, argv, &o);

	if (rc >= 0)
		return rc;
	v.o = &o;
	rc = acquire(&v);
	if (!rc)
		rc = lock_down(&v);
	if (rc)
		return rc;
	rc = serve(&v);
	release(&v);
	return rc;
}
