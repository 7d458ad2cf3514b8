/* vsock/main.c: bulkhead-vsock — set up the sockets, then one epoll loop serving the vhost-user
 * front end, the guest's kicks and the host-side Unix sockets until the front end goes away. */
#include "lib/jail_selftest.h"
#include "lib/unix_listen.h"
#include "vsock/seccomp.h"
#include "vsock/backend.h"
#include "vsock/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

static void usage(FILE *f)
{
	fputs("usage: bulkhead-vsock --socket PATH|--listen-fd N --guest-cid N --uds-path PREFIX "
	      "[-v]\n"
	      "  --socket PATH     vhost-user socket to listen on for the VMM (front end)\n"
	      "  --listen-fd N     or: a listening socket the launcher passes as descriptor N\n"
	      "  --guest-cid N     the guest's context ID (3 .. 2^32-2)\n"
	      "  --uds-path PREFIX host programs connect to PREFIX (\"CONNECT <port>\\n\");\n"
	      "                    guest connections to port P go to PREFIX_P\n"
	      "  -v                print counters on exit\n"
	      "  --no-seccomp      do not install the system-call allow-list (debugging only)\n"
	      "  --jail-selftest   test hook: report what the jail allows, then make a\n"
	      "                    forbidden call (the process must die of SIGSYS)\n",
	      f);
}

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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen-fd", required_argument, NULL, 'f' },
		{ "guest-cid", required_argument, NULL, 'c' },
		{ "uds-path", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ "no-seccomp", no_argument, NULL, 'n' },
		{ "jail-selftest", no_argument, NULL, 'J' },
		{ NULL, 0, NULL, 0 },
	};
	int no_seccomp = 0, selftest = 0;
	const char *sock_path = NULL, *uds = NULL;
	const char *given_fd = NULL;
	uint64_t cid = 0;
	int verbose = 0, o;
	char *end;
	while ((o = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			sock_path = optarg;
			break;
		case 'f':
			/* A socket the launcher already listens on: no window in which the
			 * front end could try to connect before we exist. Checked below. */
			given_fd = optarg;
			break;
		case 'u':
			uds = optarg;
			break;
		case 'c':
			errno = 0;
			cid = strtoull(optarg, &end, 10);
			/* 0-2 are reserved (hypervisor, local, host); -1 is VMADDR_CID_ANY. */
			if (errno || *end || optarg[0] < '0' || optarg[0] > '9' || cid < 3 ||
			    cid >= UINT32_MAX) {
				fprintf(stderr,
					"bulkhead-vsock: bad --guest-cid '%s': want 3 .. "
					"4294967294\n",
					optarg);
				return 2;
			}
			break;
		case 'v':
			verbose = 1;
			break;
		case 'n':
			no_seccomp = 1;
			break;
		case 'J':
			selftest = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if ((!sock_path) == (!given_fd) || !uds || !cid || optind != argc) {
		usage(stderr);
		return 2;
	}
	/* The launcher owns our lifetime: if it dies, so do we (and check it did not already). */
	pid_t parent = getppid();
	/* As pid 1 of the jail's PID namespace a SIGTERM without a handler would be ignored:
	 * then the launcher's death kills us outright. */
	if (prctl(PR_SET_PDEATHSIG, getpid() == 1 ? SIGKILL : SIGTERM) < 0 || getppid() != parent)
		return 1;

	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	int lfd = given_fd ? unix_listen_adopt(given_fd, true) : listen_path(sock_path);
	if (given_fd && lfd < 0) {
		errno = -lfd;
		lfd = -1;
	}
	if (ep < 0 || sfd < 0 || lfd < 0) {
		fprintf(stderr, "bulkhead-vsock: cannot listen on %s: %s\n",
			sock_path ? sock_path : "the given descriptor", strerror(errno));
		return 1;
	}
	int hfd = listen_path(uds);
	if (hfd < 0) {
		fprintf(stderr, "bulkhead-vsock: cannot listen on %s: %s\n", uds, strerror(errno));
		if (sock_path)
			unlink(sock_path);
		return 1;
	}
	static struct vsock_dev dev;
	vsock_dev_init(&dev, cid, uds, ep);
	struct backend b = { .dev = &dev };
	if (ep_add(ep, sfd, VSOCK_TAG(VSOCK_TAG_SIGNAL, 0)) < 0 ||
	    ep_add(ep, lfd, VSOCK_TAG(VSOCK_TAG_LISTEN, 0)) < 0 ||
	    ep_add(ep, hfd, VSOCK_TAG(VSOCK_TAG_LISTEN, 1)) < 0) {
		fprintf(stderr, "bulkhead-vsock: epoll: %s\n", strerror(errno));
		return 1;
	}

	/* Set up: from here on only the allow-list's calls, before the front end's first
	 * message and so before any guest byte. */
	if (selftest)
		jail_selftest_report();
	if (!no_seccomp) {
		int err = vsock_seccomp_install();
		if (err < 0) {
			fprintf(stderr, "bulkhead-vsock: cannot install the seccomp filter: %s\n",
				strerror(-err));
			return 1;
		}
	}
	if (selftest)
		jail_selftest_probe();

	int ctrl = -1, rc = -1;
	while (rc < 0) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "bulkhead-vsock: epoll_wait: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		for (int i = 0; i < n && rc < 0; i++) {
			uint32_t kind = (uint32_t)(evs[i].data.u64 >> 32);
			uint32_t idx = (uint32_t)evs[i].data.u64;
			if (kind == VSOCK_TAG_SIGNAL) {
				rc = 0; /* asked to stop: an orderly end */
			} else if (kind == VSOCK_TAG_LISTEN && idx == 0) {
				/* Exactly one front end per process; later ones are refused. */
				int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
				if (fd < 0)
					continue;
				if (ctrl >= 0) {
					close(fd);
					continue;
				}
				ctrl = fd;
				/* A front end stalling mid-message must not freeze the guest's
				 * traffic for long: reads time out (then we exit, non-zero). */
				struct timeval tv = { .tv_sec = 5 };
				setsockopt(ctrl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
				ep_add(ep, ctrl, VSOCK_TAG(VSOCK_TAG_CTRL, 0));
			} else if (kind == VSOCK_TAG_LISTEN) {
				int fd;
				while ((fd = accept4(hfd, NULL, NULL,
						     SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
					vsock_host_accept(&dev, fd);
			} else if (kind == VSOCK_TAG_CTRL) {
				int r = on_ctrl(&b, ctrl);
				if (r <= 0)
					rc = r == 0 ? 0 : 1;
			} else if (kind == VSOCK_TAG_KICK && idx < VSOCK_NQUEUES) {
				uint64_t v;
				if (read(dev.q[idx].kick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					continue;
				vsock_kick(&dev);
			} else if (kind == VSOCK_TAG_CONN) {
				vsock_host_event(&dev, idx, evs[i].events);
			}
		}
	}
	if (verbose)
		print_stats(&dev, &b);
	vsock_dev_reset(&dev);
	if (sock_path)
		unlink(sock_path);
	unlink(uds);
	return rc;
}
