/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_pause.c: pausing a session to disk and resuming it in a new VMM.
 *
 * A pausable session's VMM runs with --snapshot-fd on a file of the session's own
 * (${BULKHEAD_CACHE:-~/.cache/bulkhead}/sessions/ID.snap, 0600, removed with the session).
 * Pause: SIGUSR1 to the VMM, which saves the guest whole and exits VMM_EXIT_SNAPSHOT; then
 * bulkhead-vsock stops (it held the guest's connections) and the agent link waits for a new
 * call. Resume: a new bulkhead-vsock, and a new VMM restored from that file (a fresh file
 * for the next pause); the VMM tells the guest its transport was reset, and the guest's agent
 * calls home again (guest/init/agent.c). Processes, memory and the guest's own file systems
 * (tmpfs, the initramfs) carry over; connections do not (an exec in flight ends with an
 * error).
 *
 * Shares (the work directory, an image's root, binds) carry over whole. Debian 12's
 * virtiofsd keeps its FUSE session (the guest's node ids, open files) in its own process and
 * cannot hand it to another, so it is not restarted: the session holds a copy of each
 * virtio-fs connection (s->fs_keep), the back end sees no hang-up when the VMM exits, and the
 * resumed VMM is given the same connection. The save stopped its rings (GET_VRING_BASE waits
 * for the requests in flight); the new VMM sends a new memory table and starts them where
 * they stood, at the same front-end addresses (vmm/virtio/vu_front.c); the saved RAM was given
 * back first (vmm/gmem.h: gmem_release), so a paused session costs a virtiofsd, not its
 * guest's memory. The host directory stays live while paused: what changes there is what the
 * guest sees after, as it would have running. */
#include "lib/cache_dir.h"
#include "lib/errbuf.h"
#include "lib/mono.h"
#include "lib/vmm_exit.h"
#include "session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAUSE_SAVE_S  120	 /* for the VMM to save the guest once asked */
#define PAUSE_RESERVE (64 << 20) /* left free on the cache's file system after a save */

/* Snapshots are x86-64 only (vmm/arm64/snapshot_vm.c refuses them). */
#if defined(__aarch64__)
#define VMM_SAVES_NO_GUEST true
#else
#define VMM_SAVES_NO_GUEST false
#endif

bool session_pausable(const struct session *s, char *why, size_t len)
{
	const struct session_plan *p = s->plan;
	const char *no = VMM_SAVES_NO_GUEST	      ? "bulkhead-vmm saves no arm64 guest yet"
			 : p->engine.kind != ENGINE_KVM ? "the qemu engine cannot save a guest"
			 : !s->jailed		      ? "a session run with --no-jail cannot"
			 : !p->req.detached	      ? "only sessions of 'bulkhead start' can"
						      : NULL;
	if (no)
		snprintf(why, len, "%s", no);
	return !no;
}

int session_pause_prepare(struct session *s, int *snapshot_fd)
{
	char dir[PATH_MAX - 32], why[160], err[320];
	if (!session_pausable(s, why, sizeof(why)))
		return 0;
	/* Without a file to save into, the session runs as any other; only a pause says why. */
	if (cache_dir(dir, sizeof(dir), "sessions", "the paused sessions' directory", true, err,
		      sizeof(err)) < 0)
		return 0;
	snprintf(s->pause_path, sizeof(s->pause_path), "%s/%s.snap", dir, s->rd.id);
	s->pause_fd =
		open(s->pause_path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->pause_fd < 0)
		s->pause_path[0] = '\0';
	else
		*snapshot_fd = s->pause_fd;
	return 0;
}

void session_pause_forget(struct session *s)
{
	for (size_t i = 0; i < LAUNCH_FS_MAX; i++) {
		if (s->fs_keep[i] >= 0)
			close(s->fs_keep[i]);
		s->fs_keep[i] = -1;
	}
	if (s->pause_fd >= 0)
		close(s->pause_fd);
	s->pause_fd = -1;
	if (s->pause_path[0])
		unlink(s->pause_path);
	s->pause_path[0] = '\0';
}

int session_vm_save(struct session *s, int timeout_s, int *wstatus)
{
	long deadline = mono_ms() + timeout_s * 1000L;
	pid_t r;
	kill(s->vm.pid, SIGUSR1);
	while ((r = waitpid(s->vm.pid, wstatus, WNOHANG)) == 0 && mono_ms() < deadline) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (r == 0)
		return errbuf_fail(s->err, sizeof(s->err), -1,
				   "bulkhead-vmm did not save the guest within %d s", timeout_s);
	s->vm.pid = 0;
	return WIFEXITED(*wstatus) && WEXITSTATUS(*wstatus) == VMM_EXIT_SNAPSHOT ? 0 : -2;
}

int session_pause(struct session *s, int *wstatus)
{
	if (s->paused || s->vm.pid <= 0)
		return errbuf_fail(s->err, sizeof(s->err), -1, "the session is not running");
	if (s->pause_fd < 0)
		return errbuf_fail(s->err, sizeof(s->err), -1,
				   "it has no file to save into (the cache's sessions directory "
				   "could not be used when it started)");
	/* The file holds the RAM in use, at most all of it: a pause that could fill the cache's
	 * file system (others' sessions, audit logs) is refused while the guest runs on. */
	struct statvfs fs;
	uint64_t need = ((uint64_t)s->plan->req.mem_mib << 20) + PAUSE_RESERVE;
	if (fstatvfs(s->pause_fd, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < need)
		return errbuf_fail(s->err, sizeof(s->err), -1,
				   "the file system of %s has %llu MiB free; the guest may need up "
				   "to %llu MiB (its RAM and %d MiB to spare)",
				   s->pause_path,
				   (unsigned long long)((uint64_t)fs.f_bavail * fs.f_frsize >> 20),
				   (unsigned long long)(need >> 20), PAUSE_RESERVE >> 20);
	int rc = session_vm_save(s, PAUSE_SAVE_S, wstatus);
	if (rc == -1)
		snprintf(s->err + strlen(s->err), sizeof(s->err) - strlen(s->err), "; it runs on");
	if (rc)
		return rc;
	/* The guest's connections lived in bulkhead-vsock: its end is not the session's. */
	session_watch_set(s, "bulkhead-vsock", NULL, -1);
	vsock_dev_stop(&s->vs);
	agent_link_close(&s->link);
	s->link.ready = false;
	s->link.boot_deadline = 0; /* no call is due while paused */
	s->link.ready_lfd = -1;
	if (s->vm.console_fd >= 0)
		close(s->vm.console_fd);
	s->vm.console_fd = -1;
	s->paused = true;
	return 0;
}

int session_resume(struct session *s)
{
	char saved[PATH_MAX + 8];
	if (!s->paused)
		return errbuf_fail(s->err, sizeof(s->err), -1, "the session is not paused");
	/* The saved file is read whole before the guest runs; the next pause writes a new one. */
	snprintf(saved, sizeof(saved), "%s.saved", s->pause_path);
	int restore_fd = -1;
	if (rename(s->pause_path, saved) < 0 ||
	    (restore_fd = open(saved, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return errbuf_fail(s->err, sizeof(s->err), -1, "%s: %s", s->pause_path,
				   strerror(errno));
	int next = open(s->pause_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int diag[2] = { -1, -1 };
	int rc = -1;
	if (next < 0 || pipe2(diag, O_CLOEXEC) < 0) {
		errbuf_fail(s->err, sizeof(s->err), -1, "%s: %s", s->pause_path, strerror(errno));
		goto out;
	}
	/* The helpers' stderr: a new pipe (the old one ended with its writers). */
	if (s->diag[0] >= 0)
		close(s->diag[0]);
	s->diag[0] = diag[0];
	s->diag[1] = diag[1];
	if (session_vsock_start(s) < 0 || (s->jailed && session_sockets_start(s) < 0))
		goto out;
	s->link.ready_lfd = s->vs.ready_lfd;
	s->link.uds = s->vs.uds;
	if (session_engine_launch(s, restore_fd, next) < 0)
		goto out;
	close(s->pause_fd);
	s->pause_fd = next;
	next = -1;
	agent_link_arm(&s->link, s->plan->boot_timeout_s);
	s->paused = false;
	rc = 0;
out:
	if (rc < 0 && s->vs.pid > 0) {
		session_watch_set(s, "bulkhead-vsock", NULL, -1);
		vsock_dev_stop(&s->vs);
	}
	if (rc < 0 && s->diag[1] >= 0) {
		close(s->diag[1]);
		s->diag[1] = -1;
	}
	if (next >= 0) {
		close(next);
		unlink(s->pause_path);
	}
	/* Resumed: nothing of the saved guest stays on disk. Still paused: it keeps its name,
	 * for the next try. */
	if (rc == 0)
		unlink(saved);
	else if (rename(saved, s->pause_path) < 0)
		fprintf(stderr, "bulkhead: the paused guest's file %s: %s\n", saved,
			strerror(errno));
	close(restore_fd);
	return rc;
}
