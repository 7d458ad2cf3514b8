/* SPDX-License-Identifier: Apache-2.0 */
/* session/vsock_dev.c: start and stop the session's bulkhead-vsock. The vhost-user
 * socket is created and listening before the back end starts (passed as a
 * descriptor), so the engine can connect at once without a race. */
#include "session/vsock_dev.h"
#include "jail/jail.h"
#include "jail/jail_san.h"
#include "session/paths.h"
#include "jail/proc.h"
#include "lib/unix_listen.h"
#include "lib/agent_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int vsock_dev_start(struct vsock_dev *v, const struct rundir *rd, int diag_fd,
		    struct jail_ids *jail, char *err, size_t errlen)
{
	char bin[PATH_MAX], vsock_dir[PATH_MAX], ready_name[32];
	v->pid = 0;
	v->ready_lfd = -1;
	snprintf(ready_name, sizeof(ready_name), RUNDIR_VSOCK "/vsock.sock_%d", AGENT_READY_PORT);
	if (paths_join(bin, sizeof(bin), paths_bindir(), "bulkhead-vsock") < 0 ||
	    access(bin, X_OK) < 0) {
		snprintf(err, errlen, "bulkhead-vsock not found next to bulkhead (run make)");
		return -1;
	}
	if (rundir_file(rd, "vsock-vhost.sock", 1, v->vhost_sock, sizeof(v->vhost_sock)) < 0 ||
	    rundir_file(rd, RUNDIR_VSOCK "/vsock.sock", 1, v->uds, sizeof(v->uds)) < 0 ||
	    rundir_file(rd, RUNDIR_VSOCK, 0, vsock_dir, sizeof(vsock_dir)) < 0 ||
	    rundir_file(rd, ready_name, 1, v->ready_path, sizeof(v->ready_path)) < 0) {
		snprintf(err, errlen, "run directory path too long for a socket");
		return -1;
	}
	v->ready_lfd = unix_listen(v->ready_path, 1, false);
	int lfd = unix_listen(v->vhost_sock, 1, false);
	if (v->ready_lfd < 0 || lfd < 0) {
		snprintf(err, errlen, "vsock sockets in %s: %s", rd->path,
			 strerror(-(v->ready_lfd < 0 ? v->ready_lfd : lfd)));
		if (lfd >= 0)
			close(lfd);
		vsock_dev_stop(v);
		return -1;
	}
	char cid[16];
	snprintf(cid, sizeof(cid), "%d", VSOCK_GUEST_CID);
	/* --no-jail is for debugging: then no seccomp filter either. */
	char *const argv[] = { bin, "--listen-fd", "3",	   "--guest-cid",
			       cid, "--uds-path",  v->uds, jail ? NULL : "--no-seccomp",
			       NULL };
	/* Jailed, it sees of the host only the vsock directory, which becomes the jail's:
	 * it binds vsock.sock there and connects to the vsock.sock_<port> listeners. */
	const struct jail_mount mounts[] = { { .src = vsock_dir, .flags = JAIL_MOUNT_RW } };
	struct jail_spec spec = {
		.ids = jail,
		.empty_root = true,
		.mounts = mounts,
		.nmounts = 1,
		.extra_gid = (gid_t)-1,
		.fds = &lfd,
		.nfds = 1,
		.out_fd = diag_fd,
		.diag_fd = diag_fd,
	};
	struct jail_san san; /* a sanitizer build's loader and libraries; else nothing */
	int rc = jail_san_extend(&san, &spec);
	if (!rc && jail)
		rc = jail_ids_give_dir(jail, vsock_dir);
	pid_t pid = rc < 0 ? rc
		    : jail ? jail_spawn(argv, &spec)
			   : proc_spawn_listener(argv, lfd, -1, diag_fd);
	close(lfd);
	if (pid < 0) {
		snprintf(err, errlen, "cannot start %s: %s", bin, strerror((int)-pid));
		vsock_dev_stop(v);
		return -1;
	}
	v->pid = pid;
	return 0;
}

void vsock_dev_stop(struct vsock_dev *v)
{
	proc_stop(&v->pid);
	if (v->ready_lfd >= 0)
		close(v->ready_lfd);
	v->ready_lfd = -1;
	const char *paths[] = { v->vhost_sock, v->uds, v->ready_path };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (paths[i][0])
			unlink(paths[i]);
	v->vhost_sock[0] = v->uds[0] = v->ready_path[0] = '\0';
}
