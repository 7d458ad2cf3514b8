/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_helpers.c: everything a session acquires, as rows of one table started in
 * order and stopped in reverse (for the rows that started). A new way to start a session
 * (an image, an OCI bundle, a pooled guest) is a plan and, where it needs one, a row. */
#include "session/session.h"
#include "session/template.h"
#include "jail/proc.h"
#include "lib/agent_proto.h"

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct helper {
	const char *name;
	bool (*wanted)(const struct session *s); /* NULL: always */
	int (*start)(struct session *s);	 /* 0, or -1 with s->err */
	void (*stop)(struct session *s);	 /* NULL: nothing to release */
};

#define FAIL(s, ...) (snprintf((s)->err, sizeof((s)->err), __VA_ARGS__), -1)

/* A helper whose end ends the session: fd becomes readable then (a pidfd, or a shared
 * broker's connection, duplicated here). */
static void watch_fd(struct session *s, const char *name, int fd)
{
	if (fd >= 0 && s->nwatched < SESSION_MAX_WATCHED) {
		s->watched[s->nwatched].name = name;
		s->watched[s->nwatched++].fd = fd;
	} else if (fd >= 0) {
		close(fd);
	}
}

void session_watch_set(struct session *s, const char *old, const char *name, int fd)
{
	for (unsigned i = 0; old && i < s->nwatched; i++)
		if (!strcmp(s->watched[i].name, old)) {
			close(s->watched[i].fd);
			if (fd < 0) { /* no longer watched */
				s->watched[i] = s->watched[--s->nwatched];
				return;
			}
			s->watched[i].name = name;
			s->watched[i].fd = fd;
			return;
		}
	watch_fd(s, name, fd);
}

static void watch_pid(struct session *s, const char *name, pid_t pid)
{
	watch_fd(s, name, (int)syscall(SYS_pidfd_open, pid, 0));
}

static bool want_jail(const struct session *s)
{
	return !s->plan->req.no_jail;
}
static bool want_share(const struct session *s)
{
	return s->plan->share_origin != SHARE_NONE;
}
static bool want_image(const struct session *s)
{
	return s->plan->has_image;
}
static bool want_broker(const struct session *s)
{
	return s->plan->req.broker.scope != NULL || s->plan->req.bind_later;
}
static bool want_raw_tty(const struct session *s)
{
	return s->plan->req.tty && s->plan->req.interactive;
}

/* --- the run directory: every socket of the session, nowhere else --------------------- */
/* An image's environment, one entry per line (image_open refuses newlines in them), for the
 * commands `bulkhead exec` starts. */
static int image_env_put(struct session *s)
{
	const struct image_config *c = &s->plan->image.cfg;
	static char buf[IMAGE_ENV_BYTES + 1];
	size_t len = 0;
	if (!s->plan->has_image)
		return 0;
	buf[0] = '\0';
	for (size_t i = 0; i < c->nenv; i++) {
		int n = snprintf(buf + len, sizeof(buf) - len, "%s\n", c->env[i]);
		if (n < 0 || (size_t)n >= sizeof(buf) - len) {
			errno = E2BIG;
			return -1;
		}
		len += (size_t)n;
	}
	return rundir_put(&s->rd, "env", buf);
}

static int rundir_start(struct session *s)
{
	if (rundir_create(&s->rd, s->err, sizeof(s->err)) < 0)
		return -1;
	if (rundir_file(&s->rd, RUNDIR_VSOCK, 0, s->vsock_dir, sizeof(s->vsock_dir)) < 0)
		return FAIL(s, "run directory path too long");
	/* `bulkhead exec` starts its commands where this session's main one would. */
	if (rundir_put(&s->rd, "cwd", s->plan->guest_cwd) < 0 || image_env_put(s) < 0)
		return FAIL(s, "cannot write to %.300s: %s", s->rd.path, strerror(errno));
	return 0;
}
static void rundir_stop(struct session *s)
{
	rundir_remove(&s->rd);
}

/* --- the session's own uid/gid ----------------------------------------------------------- */
static int ids_start(struct session *s)
{
	if (jail_ids_acquire(&s->ids, s->plan->req.jail_uid, s->err, sizeof(s->err)) < 0)
		return -1;
	s->jailed = true;
	return 0;
}
static void ids_stop(struct session *s)
{
	jail_ids_release(&s->ids);
}

/* --- cgroups: every process of the session joins them before it runs --------------------- */
/* Their directories, one per line in the run directory's "cgroup": what `bulkhead-oci delete`
 * removes after a supervisor killed with SIGKILL (which had no chance to). */
static void cgroup_note(struct session *s)
{
	char buf[CGROUP_MAX_DIRS * (PATH_MAX + 1) + 1] = "";
	size_t len = 0;
	for (int i = 0; i < s->cg.n; i++) {
		int n = snprintf(buf + len, sizeof(buf) - len, "%s\n", s->cg.dirs[i]);
		if (n < 0 || (size_t)n >= sizeof(buf) - len)
			return;
		len += (size_t)n;
	}
	rundir_put(&s->rd, "cgroup", buf);
}

static int cgroup_start(struct session *s)
{
	struct cgroup_limits lim = {
		.mem_bytes = s->plan->mem_limit_bytes,
		.pids = CGROUP_DEFAULT_PIDS,
		.cpus = s->plan->req.cpus,
	};
	char why[256];
	if (cgroup_create(&s->cg, s->rd.id, &lim, why, sizeof(why)) == 0) {
		proc_set_cgroup(&s->cg);
		cgroup_note(s);
	} else if (s->plan->req.verbose)
		fprintf(stderr, "bulkhead: no resource limits for this session: %s\n", why);
	return 0;
}
static void cgroup_stop(struct session *s)
{
	proc_set_cgroup(NULL);
	/* Whatever is still ours goes first: the cgroups and ids must be free when we return. */
	proc_reap_all();
	char left[PATH_MAX];
	int n = cgroup_destroy(&s->cg, left, sizeof(left));
	if (n > 0) /* never silently: something of the session's may still run */
		fprintf(stderr,
			"bulkhead: %d of the session's cgroups could not be removed (%s): "
			"processes in them would not end\n",
			n, left);
}

/* --- the diagnostics pipe: the engine's and back ends' stderr ---------------------------- */
static int diag_start(struct session *s)
{
	if (pipe2(s->diag, O_CLOEXEC) < 0)
		return FAIL(s, "pipe: %s", strerror(errno));
	return 0;
}
static void diag_stop(struct session *s)
{
	for (int i = 0; i < 2; i++)
		if (s->diag[i] >= 0)
			close(s->diag[i]);
	s->diag[0] = s->diag[1] = -1;
}

/* --- the back ends ------------------------------------------------------------------------ */
static int share_start(struct session *s)
{
	s->fs = s->plan->share;
	if (share_fs_start(&s->fs, &s->rd, "fs.sock", s->diag[1], s->err, sizeof(s->err)) < 0)
		return -1;
	watch_pid(s, "virtiofsd", s->fs.pid);
	return 0;
}
static void share_stop(struct session *s)
{
	share_fs_stop(&s->fs);
}

/* The binds: a virtiofsd each, as the work share's. */
static bool want_binds(const struct session *s)
{
	return s->plan->req.nbinds > 0;
}
static int binds_start(struct session *s)
{
	for (size_t i = 0; i < s->plan->req.nbinds; i++) {
		char name[32];
		snprintf(name, sizeof(name), "bind%zu.sock", i);
		s->binds[i] = s->plan->binds[i];
		if (share_fs_start(&s->binds[i], &s->rd, name, s->diag[1], s->err, sizeof(s->err)) <
		    0)
			return -1;
		watch_pid(s, "virtiofsd (bind)", s->binds[i].pid);
	}
	return 0;
}
static void binds_stop(struct session *s)
{
	for (size_t i = 0; i < s->plan->req.nbinds; i++)
		share_fs_stop(&s->binds[i]);
}

/* The image's root, read-only below the session's own write layer. */
static int image_start(struct session *s)
{
	const struct session_request *r = &s->plan->req;
	if (r->root) {
		if (share_root_start(&s->img, r->root->rootfs, r->root_ro, &s->rd, s->diag[1],
				     s->err, sizeof(s->err)) < 0)
			return -1;
	} else if (share_image_start(&s->img, s->plan->image.rootfs, r->keep_changes,
				     r->disk_mib ? r->disk_mib : SHARE_IMAGE_DISK_MIB, &s->rd,
				     s->diag[1], s->err, sizeof(s->err)) < 0) {
		return -1;
	}
	watch_pid(s, "virtiofsd (image)", s->img.pid);
	return 0;
}
static void image_stop(struct session *s)
{
	share_image_stop(&s->img);
}

int session_vsock_start(struct session *s)
{
	if (vsock_dev_start(&s->vs, &s->rd, s->diag[1], s->jailed ? &s->ids : NULL, s->err,
			    sizeof(s->err)) < 0)
		return -1;
	watch_pid(s, "bulkhead-vsock", s->vs.pid);
	return 0;
}
static void vsock_stop(struct session *s)
{
	vsock_dev_stop(&s->vs);
}

/* The guest's only way out: with no scope, nothing listens on the broker port and every
 * connection from the guest is refused. */
static int broker_start(struct session *s)
{
	if (s->plan->req.bind_later)
		return session_bind_start(s);
	if (broker_dev_start(&s->br, &s->plan->req.broker, &s->rd, s->diag[1], s->err,
			     sizeof(s->err)) < 0) {
		session_diag_last(s, s->err, sizeof(s->err));
		return -1;
	}
	if (s->br.pid)
		watch_pid(s, "bulkhead-broker", s->br.pid);
	else
		watch_fd(s, "the shared broker", fcntl(s->br.ctl_fd, F_DUPFD_CLOEXEC, 3));
	return 0;
}
static void broker_stop(struct session *s)
{
	session_bind_stop(s);
	broker_dev_stop(&s->br);
}

/* Every socket the guest may reach is there now: the jailed back end may connect. */
int session_sockets_start(struct session *s)
{
	int rc = jail_ids_give_dir(&s->ids, s->vsock_dir);
	return rc < 0 ? FAIL(s, "%.300s: %s", s->vsock_dir, strerror(-rc)) : 0;
}

/* --- our terminal, for -it: every key passes through (Ctrl-C too) ------------------------- */
static int tty_start(struct session *s)
{
	if (tcgetattr(0, &s->saved_tty) == 0) {
		struct termios t = s->saved_tty;
		cfmakeraw(&t);
		s->raw_tty = tcsetattr(0, TCSANOW, &t) == 0;
	}
	return 0;
}
static void tty_stop(struct session *s)
{
	if (s->raw_tty)
		tcsetattr(0, TCSANOW, &s->saved_tty);
	s->raw_tty = false;
}

/* --- the engine: the VM itself, last; the agent link with it ----------------------------- */
static int engine_start(struct session *s)
{
	const struct session_plan *p = s->plan;
	const struct session_request *r = &p->req;
	struct winsize ws = { .ws_row = 0 };
	if (r->tty)
		ioctl(0, TIOCGWINSZ, &ws);
	s->link = (struct agent_link){
		.ready_lfd = s->vs.ready_lfd,
		.uds = s->vs.uds,
		.flags = (r->tty ? AGENT_EXEC_TTY : 0) | (r->interactive ? AGENT_EXEC_STDIN : 0),
		.rows = ws.ws_row,
		.cols = ws.ws_col,
		.cwd = p->guest_cwd,
		.argv = p->argv,
		.env = p->env,
		.in_fd = r->interactive ? 0 : -1,
		.ready_fd = -1,
		.notify_fd = s->notify_fd,
		.start_fd = r->start_fd > 2 ? r->start_fd : -1,
		.ready_stderr_fd = r->ready_stderr_fd > 2 ? r->ready_stderr_fd : -1,
		.no_escapes = r->forward_signals,
		.session_id = s->rd.id,
	};
	int snapshot_fd = s->template_make ? s->template_fd : -1;
	if (!s->template_make && session_pause_prepare(s, &snapshot_fd) < 0)
		return -1;
	return session_engine_launch(s, s->template_fd >= 0 && !s->template_make ? s->template_fd : -1,
				     snapshot_fd);
}

int session_engine_launch(struct session *s, int restore_fd, int snapshot_fd)
{
	const struct session_plan *p = s->plan;
	const struct session_request *r = &p->req;
	struct launch l = {
		.kernel = p->kernel,
		.initrd = p->initrd,
		.cmdline = s->template_make ? p->template_cmdline : p->cmdline,
		.mem_mib = r->mem_mib,
		.ram_file = r->ram_file,
		.jail = s->jailed ? &s->ids : NULL,
		.cpus = r->cpus,
		.verbose = r->verbose,
		.fs = { { want_share(s) ? s->fs.sock : NULL, SHARE_FS_TAG },
			{ want_image(s) ? s->img.sock : NULL, SHARE_IMAGE_TAG },
			{ r->nbinds > 0 ? s->binds[0].sock : NULL, BOOT_ARGS_BIND_TAG "0" },
			{ r->nbinds > 1 ? s->binds[1].sock : NULL, BOOT_ARGS_BIND_TAG "1" } },
		.diag_w = s->diag[1],
		.vsock_sock = s->vs.vhost_sock,
		.guest_cid = VSOCK_GUEST_CID,
		.restore_fd = restore_fd,
		.snapshot_fd = snapshot_fd,
		.fs_keep = s->pause_fd >= 0 ? s->fs_keep : NULL, /* pausable: virtiofsd outlives */
	};
	if (p->engine.ops->start(&l, &p->engine, &s->vm, s->err, sizeof(s->err)) < 0)
		return -1;
	/* Only the helpers hold the write end now: the pipe ends with them. */
	close(s->diag[1]);
	s->diag[1] = -1;
	return 0;
}
static void engine_stop(struct session *s)
{
	agent_link_close(&s->link);
	session_pause_forget(s);
	if (s->vm.pid > 0) { /* session_watch stops it; this is for a failed start */
		kill(s->vm.pid, SIGKILL);
		while (waitpid(s->vm.pid, NULL, 0) < 0 && errno == EINTR)
			;
		s->vm.pid = 0;
	}
	if (s->vm.console_fd >= 0)
		close(s->vm.console_fd);
	s->vm.console_fd = -1;
	/* Guest RAM written by the jail's uid is the caller's to inspect. */
	const char *ram = s->plan->req.ram_file;
	if (ram && s->jailed && s->ids.uid != geteuid() && !access(ram, F_OK) &&
	    chown(ram, geteuid(), getegid()) < 0)
		fprintf(stderr, "bulkhead: --ram-file %s: %s\n", ram, strerror(errno));
}

/* The caller's lifeline (`bulkhead serve`): its end ends the session. */
static bool want_lifeline(const struct session *s)
{
	return s->plan->req.lifeline_fd > 2;
}
static int lifeline_start(struct session *s)
{
	int fd = fcntl(s->plan->req.lifeline_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return FAIL(s, "lifeline descriptor: %s", strerror(errno));
	watch_fd(s, "bulkhead serve", fd);
	return 0;
}

/* A restored template is told its session before anything else (session/template.c). */
static bool want_template_session(const struct session *s)
{
	return s->template_fd >= 0 && !s->template_make;
}

/* --template: the cache's, or one made now by a session of its own (session/template.c);
 * before anything of this session exists. */
static bool want_template(const struct session *s)
{
	return s->plan->req.template && !s->template_make;
}
static int template_start(struct session *s)
{
	return (s->template_fd = template_get(s->plan, s->err, sizeof(s->err))) < 0 ? -1 : 0;
}
static void template_stop(struct session *s)
{
	if (s->template_fd >= 0)
		close(s->template_fd);
	s->template_fd = -1;
}

static const struct helper helpers[] = {
	{ "template", want_template, template_start, template_stop },
	{ "run directory", NULL, rundir_start, rundir_stop },
	{ "lifeline", want_lifeline, lifeline_start, NULL },
	{ "jail ids", want_jail, ids_start, ids_stop },
	{ "cgroups", NULL, cgroup_start, cgroup_stop },
	{ "diagnostics pipe", NULL, diag_start, diag_stop },
	{ "virtiofsd", want_share, share_start, share_stop },
	{ "virtiofsd (image)", want_image, image_start, image_stop },
	{ "virtiofsd (binds)", want_binds, binds_start, binds_stop },
	{ "bulkhead-vsock", NULL, session_vsock_start, vsock_stop },
	{ "broker", want_broker, broker_start, broker_stop },
	{ "the guest's sockets to the jail", want_jail, session_sockets_start, NULL },
	{ "terminal", want_raw_tty, tty_start, tty_stop },
	{ "engine", NULL, engine_start, engine_stop },
	{ "the template's session", want_template_session, template_send_session, NULL },
};
#define NHELPERS ((int)(sizeof(helpers) / sizeof(helpers[0])))

int session_start(struct session *s, int *ran)
{
	for (int i = 0; i < NHELPERS; i++) {
		*ran = i + 1; /* a row that fails may have acquired part: it is stopped too */
		if (helpers[i].wanted && !helpers[i].wanted(s))
			continue;
		if (helpers[i].start(s) < 0)
			return -1;
	}
	return 0;
}

void session_stop(struct session *s, int n)
{
	for (int i = n - 1; i >= 0; i--)
		if (helpers[i].stop && (!helpers[i].wanted || helpers[i].wanted(s)))
			helpers[i].stop(s);
	for (unsigned i = 0; i < s->nwatched; i++)
		close(s->watched[i].fd);
	s->nwatched = 0;
}
