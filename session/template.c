/* SPDX-License-Identifier: Apache-2.0 */
/* session/template.c: templates (session/template.h): found by key in the cache, made by a
 * session of their own, and turned into a session after their restore. */
#include "session/template.h"
#include "session/template_key.h"
#include "lib/agent_proto.h"
#include "lib/cache_dir.h"
#include "lib/errbuf.h"
#include "lib/io.h"
#include "lib/mono.h"
#include "lib/unix_listen.h"
#include "lib/vmm_exit.h"
#include "session/engine.h"
#include "session/paths.h"
#include "session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEMPLATE_SAVE_S 120 /* for the VMM to save a template once asked */

/* What the plan's template depends on (session/template_key.h). */
static void inputs_of(const struct session_plan *p, struct template_inputs *in)
{
	*in = (struct template_inputs){ .mem_mib = p->req.mem_mib,
					.cpus = p->req.cpus,
					.kernel = p->kernel,
					.initrd = p->initrd,
					.fs = { p->share_origin != SHARE_NONE, p->has_image,
						p->req.nbinds > 0, p->req.nbinds > 1 } };
	snprintf(in->cmdline, sizeof(in->cmdline), "%s", p->template_cmdline);
}

int template_path(const struct session_plan *p, char *path, size_t len, int create, char *err,
		  size_t errlen)
{
	struct template_inputs in;
	char name[TEMPLATE_NAME_LEN + 1], dir[PATH_MAX];
	inputs_of(p, &in);
	if (template_name(&in, name, err, errlen) < 0 ||
	    cache_dir(dir, sizeof(dir), "templates", "the template cache", create, err, errlen) < 0)
		return -1;
	int n = snprintf(path, len, "%s/%s.snap", dir, name);
	if (n < 0 || (size_t)n >= len)
		return errbuf_fail(err, errlen, -1, "--template: the cache's path is too long");
	return 0;
}

/* Opens a template for the VMM: a regular file of ours, no one else's to read or write. */
static int open_checked(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return errno == ENOENT
			       ? -2
			       : errbuf_fail(err, errlen, -1, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !template_file_ours(&st)) {
		close(fd);
		return errbuf_fail(
			err, errlen, -1,
			"%s is not a template of ours (a regular file, ours, mode 0600): "
			"remove it",
			path);
	}
	return fd;
}

static bool vm_ended(const struct session *s)
{
	siginfo_t si = { 0 };
	return waitid(P_PID, (id_t)s->vm.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == s->vm.pid;
}

/* Waits for the template guest's AGENT_TEMPLATE_READY on the ready port. */
static int wait_ready(struct session *s, long deadline)
{
	int c = -1;
	for (;;) {
		long left = deadline - mono_ms();
		struct pollfd pfd = { .fd = c >= 0 ? c : s->vs.ready_lfd, .events = POLLIN };
		if (left <= 0)
			return errbuf_fail(s->err, sizeof(s->err), -1,
					   "the template's guest did not call home in time (see "
					   "--boot-timeout)");
		if (vm_ended(s)) {
			snprintf(s->err, sizeof(s->err),
				 "the template's guest stopped while booting");
			session_diag_last(s, s->err, sizeof(s->err));
			return -1;
		}
		if (poll(&pfd, 1, left > 100 ? 100 : (int)left) <= 0)
			continue;
		if (c < 0) {
			c = accept4(s->vs.ready_lfd, NULL, NULL, SOCK_CLOEXEC);
			continue;
		}
		uint8_t h[AGENT_HDR_LEN + 1];
		ssize_t n = recv(c, h, sizeof(h), MSG_DONTWAIT);
		close(c);
		uint8_t want[AGENT_HDR_LEN];
		agent_hdr_encode(want, AGENT_TEMPLATE_READY, 0);
		if (n == AGENT_HDR_LEN && !memcmp(h, want, sizeof(want)))
			return 0;
		return errbuf_fail(s->err, sizeof(s->err), -1,
				   "the template's guest did not say it waits for its session (is "
				   "the initramfs this bulkhead's?)");
	}
}

/* Has the VMM save the template and end (a VMM still running is engine_stop's to end). */
static int save(struct session *s)
{
	int st = 0, rc = session_vm_save(s, TEMPLATE_SAVE_S, &st);
	if (rc == 0)
		return 0;
	snprintf(s->err, sizeof(s->err), "bulkhead-vmm did not save the template (%s)",
		 rc == -1 ? "it took too long" : "it ended otherwise");
	session_diag_last(s, s->err, sizeof(s->err));
	return -1;
}

/* Boots the template's guest in a session of its own and has it saved into fd. */
static int make(const struct session_plan *p, int fd, char *err, size_t errlen)
{
	struct session_plan *tp = malloc(sizeof(*tp));
	struct session *s = NULL;
	int ran = 0, rc = -1;
	if (!tp)
		return errbuf_fail(err, errlen, -1, "out of memory");
	/* The same machine and shares, but no broker, no terminal, no caller to tell: the
	 * template runs nothing. */
	*tp = *p;
	tp->req.broker = (struct broker_opts){ 0 };
	tp->req.bind_later = false;
	tp->req.tty = tp->req.interactive = false;
	tp->req.lifeline_fd = tp->req.start_fd = tp->req.ready_stderr_fd = -1;
	tp->req.verbose = false;
	if (!(s = session_new(tp, -1))) {
		free(tp);
		return errbuf_fail(err, errlen, -1, "out of memory");
	}
	s->template_fd = fd;
	s->template_make = true;
	if (session_start(s, &ran) == 0 &&
	    wait_ready(s, mono_ms() + 1000L * p->boot_timeout_s) == 0 && save(s) == 0)
		rc = 0;
	if (rc < 0)
		errbuf_fail(err, errlen, -1, "making the template: %s", s->err);
	session_stop(s, ran);
	s->template_fd = -1; /* the caller's */
	session_free(s);
	free(tp);
	return rc;
}

int template_get(const struct session_plan *p, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	if (template_path(p, path, sizeof(path), 1, err, errlen) < 0)
		return -1;
	int fd = open_checked(path, err, errlen);
	if (fd != -2)
		return fd;
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	int wfd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (wfd < 0)
		return errbuf_fail(err, errlen, -1, "%s: %s", tmp, strerror(errno));
	/* The jailed VMM writes it through the descriptor; the file stays ours. */
	int rc = make(p, wfd, err, errlen);
	if (!rc && (fsync(wfd) < 0 || rename(tmp, path) < 0))
		rc = errbuf_fail(err, errlen, -1, "%s: %s", path, strerror(errno));
	if (!rc) { /* for `bulkhead template ls`; a template without one still serves */
		struct template_inputs in;
		inputs_of(p, &in);
		template_shape_write(path, &in);
	}
	close(wfd);
	if (rc) {
		unlink(tmp);
		return -1;
	}
	return open_checked(path, err, errlen);
}

/* --- after the restore ------------------------------------------------------------------- */

/* Reads up to a newline or the end: the handshake's reply. */
static size_t recv_until(int c, char *buf, size_t cap, long deadline)
{
	size_t got = 0;
	while (got < cap - 1 && mono_ms() < deadline) {
		ssize_t n = recv(c, buf + got, 1, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0 || buf[got++] == '\n')
			break;
	}
	buf[got] = '\0';
	return got;
}

/* One try: "CONNECT TEMPLATE_PORT" through bulkhead-vsock, the frame, the guest's READY.
 * 0, 1 when the guest is not reachable yet, or -1 with s->err set. */
static int send_once(struct session *s, const uint8_t *frame, size_t len, long deadline)
{
	static const char hs[] = "CONNECT 1027\n";
	_Static_assert(TEMPLATE_PORT == 1027, "the handshake names TEMPLATE_PORT");
	char reply[64];
	int c = unix_connect(s->vs.uds, false);
	if (c < 0)
		return 1;
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (io_write_full(c, hs, sizeof(hs) - 1) < 0 ||
	    (recv_until(c, reply, sizeof(reply), deadline), strncmp(reply, "OK ", 3) != 0)) {
		close(c);
		return 1; /* nothing listens yet: the restored guest has not run */
	}
	/* The guest answers READY once it has applied the frame; a connection that ends before
	 * (the restore's transport reset can end one made just after it) is tried again. */
	uint8_t want[AGENT_HDR_LEN], got[AGENT_HDR_LEN];
	size_t n = 0;
	agent_hdr_encode(want, AGENT_READY, 0);
	if (io_write_full(c, frame, len) == 0)
		while (n < sizeof(got) && mono_ms() < deadline) {
			ssize_t r = recv(c, got + n, sizeof(got) - n, 0);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0)
				break;
			n += (size_t)r;
		}
	close(c);
	if (n == 0)
		return 1;
	if (n != sizeof(got) || memcmp(got, want, sizeof(want)))
		return errbuf_fail(s->err, sizeof(s->err), -1,
				   "the restored template did not take its session");
	return 0;
}

int template_send_session(struct session *s)
{
	const struct session_plan *p = s->plan;
	static uint8_t frame[AGENT_HDR_LEN + AGENT_SESSION_FIXED + AGENT_SESSION_ARGS_MAX + 1];
	struct agent_session ses = { .args = p->template_args };
	struct timespec now;
	if (getrandom(ses.entropy, sizeof(ses.entropy), 0) != (ssize_t)sizeof(ses.entropy))
		return errbuf_fail(s->err, sizeof(s->err), -1, "getrandom: %s", strerror(errno));
	long deadline = mono_ms() + 1000L * p->boot_timeout_s;
	int rc = 1;
	while (rc == 1) {
		clock_gettime(CLOCK_REALTIME, &now);
		ses.sec = now.tv_sec;
		ses.nsec = (uint32_t)now.tv_nsec;
		long n = agent_session_encode(frame + AGENT_HDR_LEN, sizeof(frame) - AGENT_HDR_LEN,
					      &ses);
		if (n < 0) {
			rc = errbuf_fail(s->err, sizeof(s->err), -1,
					 "the session's arguments do not fit a template's session");
			break;
		}
		agent_hdr_encode(frame, AGENT_SESSION, (uint32_t)n);
		rc = send_once(s, frame, AGENT_HDR_LEN + (size_t)n, deadline);
		if (rc == 1 && vm_ended(s)) {
			rc = 0; /* the session's watch says how it ended, with the VMM's own words
				 */
		} else if (rc == 1 && mono_ms() >= deadline) {
			snprintf(s->err, sizeof(s->err),
				 "the restored template did not take its session in time");
			session_diag_last(s, s->err, sizeof(s->err));
			rc = -1;
		} else if (rc == 1) {
			usleep(10000);
		}
	}
	explicit_bzero(&ses, sizeof(ses));
	explicit_bzero(frame, sizeof(frame));
	return rc;
}
