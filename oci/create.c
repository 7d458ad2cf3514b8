/* SPDX-License-Identifier: Apache-2.0 */
/* oci/create.c: `create` and `start`. create turns the bundle into a session request (its root
 * served as it is, its process as the main command, its limits as guest RAM and vCPUs, its
 * directory bind mounts as shares, the io.bulkhead.* annotations as the broker's) and
 * forks the session's supervisor, which boots the guest and waits at the start gate (a FIFO in
 * the state directory). create returns once the guest is ready, with the supervisor's pid in
 * --pid-file: the caller (a subreaper: conmon, containerd's shim) adopts it, and its exit
 * status is the command's. start opens the gate. */
#include "session/plan.h"
#include "session/session.h"
#include "jail/proc.h"
#include "oci/bundle.h"
#include "oci/state.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct create_opts {
	const char *bundle, *pid_file, *console, *id;
};

static int create_opts(const struct oci_globals *g, int argc, char **argv, struct create_opts *o)
{
	static const struct option longopts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ "no-pivot", no_argument, NULL, 'n' },
		{ "no-new-keyring", no_argument, NULL, 'k' },
		{ 0 },
	};
	int ch;
	opterr = 0;
	optind = 1;
	o->bundle = ".";
	while ((ch = getopt_long(argc, argv, "+b:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'b':
			o->bundle = optarg;
			break;
		case 'p':
			o->pid_file = optarg;
			break;
		case 'c':
			o->console = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "0") != 0) {
				oci_error(g,
					  "create: --preserve-fds: a microVM takes no descriptors "
					  "of the caller's");
				return -1;
			}
			break;
		case 'n':
		case 'k':
			break; /* the guest has its own root and keyrings */
		default:
			oci_error(g, "create: bad option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (argc - optind != 1) {
		oci_error(g, "create: need exactly one container id");
		return -1;
	}
	o->id = argv[optind];
	return 0;
}

/* An inline io.bulkhead.scope goes to a file of the state directory (the broker reads files). */
static const char *scope_file(struct oci_container *c, const char *scope, char *path, size_t len,
			      char *err, size_t errlen)
{
	if (!scope || scope[0] == '/')
		return scope;
	if (oci_container_file(c, "scope.json", path, len) < 0) {
		snprintf(err, errlen, "state directory path too long");
		return NULL;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	size_t n = strlen(scope);
	if (fd < 0 || write(fd, scope, n) != (ssize_t)n || close(fd) < 0) {
		snprintf(err, errlen, "%.300s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return path;
}

/* The session as the bundle asks. img and the strings stay the caller's. */
static void request(const struct oci_globals *g, struct oci_bundle *b, struct image *img,
		    const char *scope, const char *id, struct session_request *r)
{
	*r = (struct session_request)SESSION_REQUEST_INIT;
	memset(img, 0, sizeof(*img));
	snprintf(img->name, sizeof(img->name), "%.*s", IMAGE_NAME_MAX, id);
	snprintf(img->rootfs, sizeof(img->rootfs), "%s", b->root);
	img->cfg = b->proc.cfg;
	r->root = img;
	r->root_ro = b->root_ro;
	r->mem_mib = b->mem_mib;
	r->cpus = b->cpus;
	r->hostname = b->hostname;
	r->interactive = true; /* the caller's stdin, /dev/null when it gives none */
	r->forward_signals = true;
	r->broker.scope = scope ? scope : g->scope;
	r->broker.shared = b->broker ? b->broker : g->broker;
	r->broker.vault = b->vault ? b->vault : g->vault;
	r->broker.ca_file = b->ca_file ? b->ca_file : g->ca_file;
	r->broker.audit = b->audit;
	r->share_secrets = b->share_secrets ? b->share_secrets : g->share_secrets;
	for (size_t i = 0; i < b->nbinds; i++) {
		r->binds[i].src = b->binds[i].src;
		r->binds[i].dest = b->binds[i].dest;
		r->binds[i].ro = b->binds[i].ro;
	}
	r->nbinds = b->nbinds;
}

/* The broker's files, from annotations or our options, are what they claim before anything
 * reads them: a FIFO would block create for ever, a device feed it garbage. */
static int broker_files(const struct broker_opts *o, char *err, size_t errlen)
{
	const char *files[] = { o->scope, o->vault, o->ca_file, o->audit, o->shared };
	const char *what[] = { "scope", "vault", "ca-file", "audit", "broker" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct stat st;
		if (!files[i])
			continue;
		if (stat(files[i], &st) < 0) {
			if (i == 3 && errno == ENOENT)
				continue; /* an audit log is made when missing */
			snprintf(err, errlen, "io.bulkhead.%s %.300s: %s", what[i], files[i],
				 strerror(errno));
			return -1;
		}
		if (i == 4 ? !S_ISSOCK(st.st_mode) : !S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "io.bulkhead.%s %.300s: not a %s", what[i], files[i],
				 i == 4 ? "socket" : "regular file");
			return -1;
		}
	}
	return 0;
}

/* Waits for the supervisor's word (the session's id once the guest is ready) while passing
 * our signals on; 0 with id, or -1 (it failed and said why on its stderr). */
static int await_ready(pid_t pid, int rfd, char *id, size_t idlen)
{
	int sfd = proc_signalfd();
	ssize_t n = -1;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = rfd, .events = POLLIN },
					 { .fd = sfd, .events = POLLIN } };
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGWINCH)
				kill(pid, SIGTERM);
			continue;
		}
		if (pfd[0].revents) {
			n = read(rfd, id, idlen - 1);
			break;
		}
	}
	close(sfd);
	if (n <= 1)
		return -1;
	id[n] = '\0';
	id[strcspn(id, "\n")] = '\0';
	return 0;
}

/* The supervisor: the container's stdio (or its terminal), its own session, the guest. */
static void supervise(struct session_plan *plan, int tty, int notify_w, pid_t parent, int lock_fd)
{
	close(lock_fd); /* the state directory's lock is create's alone */
	if (tty >= 0) {
		/* Until the guest is ready, what fails is said on create's stderr (the caller's),
		 * not on a terminal nobody may watch yet. */
		int caller_stderr = dup(2), high = -1;
		if (caller_stderr < 0 || oci_console_attach(tty) < 0 ||
		    (high = fcntl(2, F_DUPFD_CLOEXEC, 3)) < 0 || dup2(caller_stderr, 2) < 0)
			_exit(EXIT_BULKHEAD);
		close(caller_stderr);
		plan->req.ready_stderr_fd = high;
		/* Decided here, where the terminal is stdin: the command gets a terminal of the
		 * guest's, relayed from this one. */
		plan->req.tty = true;
	} else {
		setsid();
	}
	/* Until the guest is ready, create's end is ours. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(EXIT_BULKHEAD);
	_exit(session_run(plan, notify_w));
}

static int spawn(const struct oci_globals *g, struct oci_container *c, struct oci_bundle *b,
		 struct session_plan *plan, int tty, const char *pid_file)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		oci_error(g, "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t parent = getpid(), pid = fork();
	if (pid == 0) {
		close(p[0]);
		supervise(plan, tty, p[1], parent, c->lock_fd);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		oci_error(g, "fork: %s", strerror(errno));
		return -1;
	}
	char session[64], err[512];
	int rc = await_ready(pid, p[0], session, sizeof(session));
	close(p[0]);
	if (rc < 0) {
		int st = 0;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		oci_error(g, "create %s: the session did not start (status %d%s)", c->id,
			  WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
			  "; its message is above");
		return -1;
	}
	json_t *ann = json_object_get(b->doc, "annotations");
	rc = oci_container_save(c, b->dir, pid, session, json_is_object(ann) ? ann : NULL,
				json_object_get(b->doc, "process"), err, sizeof(err));
	if (rc == 0 && pid_file && oci_pid_file(pid_file, pid) < 0) {
		snprintf(err, sizeof(err), "--pid-file %s: %s", pid_file, strerror(errno));
		rc = -1;
	}
	if (rc < 0) {
		oci_error(g, "create %s: %s", c->id, err);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	return 0;
}

int oci_create(const struct oci_globals *g, int argc, char **argv)
{
	struct create_opts o = { 0 };
	if (create_opts(g, argc, argv, &o) < 0)
		return 1;
	static struct oci_bundle b;
	static struct oci_container c;
	static struct image img;
	static struct session_plan plan;
	char err[512] = "", scope_path[PATH_MAX + 16], fifo[PATH_MAX + 16];
	if (oci_bundle_load(&b, o.bundle, err, sizeof(err)) < 0) {
		oci_error(g, "create %s: %s", o.id, err);
		oci_bundle_free(&b);
		return 1;
	}
	if (oci_container_open(g, o.id, true, &c, err, sizeof(err)) < 0) {
		oci_error(g, "%s", err);
		oci_bundle_free(&b);
		return 1;
	}
	for (size_t i = 0; i < b.nnotes; i++)
		oci_note(g, "create %s: mount %s", o.id, b.notes[i]);
	int tty = -1, start_fd = -1, rc = 1;
	struct session_request req;
	const char *scope =
		scope_file(&c, b.scope, scope_path, sizeof(scope_path), err, sizeof(err));
	if (b.scope && !scope)
		goto fail;
	request(g, &b, &img, scope, o.id, &req);
	if (broker_files(&req.broker, err, sizeof(err)) < 0)
		goto fail;
	if (oci_container_file(&c, "start", fifo, sizeof(fifo)) < 0 || mkfifo(fifo, 0600) < 0 ||
	    (start_fd = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
		snprintf(err, sizeof(err), "the start gate %.300s: %s", fifo, strerror(errno));
		goto fail;
	}
	req.start_fd = start_fd;
	if (b.proc.terminal && !o.console) {
		snprintf(err, sizeof(err), "process.terminal is set but no --console-socket given");
		goto fail;
	}
	if (plan_resolve(&req, &plan, err, sizeof(err)) < 0)
		goto fail;
	if (b.proc.terminal &&
	    (tty = oci_console_open(o.console, b.proc.rows, b.proc.cols, err, sizeof(err))) < 0) {
		plan_release(&plan);
		goto fail;
	}
	rc = spawn(g, &c, &b, &plan, tty, o.pid_file) < 0;
	plan_release(&plan);
	if (tty >= 0)
		close(tty);
	close(start_fd);
	if (rc)
		oci_container_remove(&c);
	oci_container_close(&c);
	oci_bundle_free(&b);
	return rc;
fail:
	oci_error(g, "create %s: %s", o.id, err);
	if (start_fd >= 0)
		close(start_fd);
	oci_container_remove(&c);
	oci_container_close(&c);
	oci_bundle_free(&b);
	return 1;
}

int oci_start(const struct oci_globals *g, int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		oci_error(g, "usage: start ID");
		return 1;
	}
	struct oci_container c;
	char err[320], path[PATH_MAX + 16];
	if (oci_container_open(g, argv[1], false, &c, err, sizeof(err)) < 0) {
		oci_error(g, "%s", err);
		return 1;
	}
	int rc = 1, fd = -1;
	if (c.status != OCI_CREATED) {
		oci_error(g, "cannot start a container that is %s", oci_status_name(c.status));
		goto out;
	}
	/* "started" first: once the gate opens, state must already say running. */
	if (oci_container_file(&c, "started", path, sizeof(path)) < 0 ||
	    close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		oci_error(g, "start %s: %s", c.id, strerror(errno));
		goto out;
	}
	char fifo[PATH_MAX + 16];
	if (oci_container_file(&c, "start", fifo, sizeof(fifo)) == 0)
		fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		unlink(path);
		oci_error(g, "start %s: the container's supervisor is gone (%s)", c.id,
			  strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	oci_container_close(&c);
	return rc;
}
