/* cli/broker_dev.c: start and stop the session's bulkhead-broker. Its socket is
 * created and listening before it starts (passed as a descriptor); the guest
 * reaches it only through that one vsock port. */
#include "cli/broker_dev.h"
#include "cli/paths.h"
#include "cli/proc.h"
#include "lib/unix_listen.h"
#include "lib/agent_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ${XDG_STATE_HOME:-~/.local/state}/bulkhead/audit/<session id>.log: one chain per
 * session (a log is locked by the broker that writes it), kept after the session. */
static int default_audit_path(const struct rundir *rd, char *buf, size_t len)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX];
	int n = state && *state ? snprintf(dir, sizeof(dir), "%s/bulkhead/audit", state)
				: snprintf(dir, sizeof(dir), "%s/.local/state/bulkhead/audit",
					   home && *home ? home : "/root");
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -ENAMETOOLONG;
	/* mkdir -p, each level 0700 when we create it. */
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	n = snprintf(buf, len, "%s/%s.log", dir, rd->id);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int broker_dev_start(struct broker_dev *b, const struct broker_opts *o, const struct rundir *rd,
		     int diag_fd, char *err, size_t errlen)
{
	char bin[PATH_MAX], name[32];
	b->pid = 0;
	snprintf(name, sizeof(name), "vsock.sock_%d", BROKER_VSOCK_PORT);
	if (paths_join(bin, sizeof(bin), paths_bindir(), "bulkhead-broker") < 0 ||
	    access(bin, X_OK) < 0) {
		snprintf(err, errlen, "bulkhead-broker not found next to bulkhead (run make)");
		return -1;
	}
	if (access(o->scope, R_OK) < 0) {
		snprintf(err, errlen, "--scope %s: %s", o->scope, strerror(errno));
		return -1;
	}
	if (rundir_file(rd, name, 1, b->sock, sizeof(b->sock)) < 0) {
		snprintf(err, errlen, "run directory path too long for a socket");
		return -1;
	}
	int lfd = unix_listen(b->sock, 64, false);
	if (lfd < 0) {
		snprintf(err, errlen, "broker socket %s: %s", b->sock, strerror(-lfd));
		return -1;
	}
	const char *argv[16];
	int n = 0;
	argv[n++] = bin;
	argv[n++] = "--listen-fd";
	argv[n++] = "3";
	argv[n++] = "--rules";
	argv[n++] = o->scope;
	if (o->vault) {
		argv[n++] = "--vault";
		argv[n++] = o->vault;
	}
	if (o->ca_file) {
		argv[n++] = "--ca-file";
		argv[n++] = o->ca_file;
	}
	char audit[PATH_MAX];
	int arc = o->audit ? 0 : default_audit_path(rd, audit, sizeof(audit));
	if (arc < 0) {
		snprintf(err, errlen, "audit log directory: %s", strerror(-arc));
		close(lfd);
		return -1;
	}
	argv[n++] = "--audit";
	argv[n++] = o->audit ? o->audit : audit;
	argv[n++] = "--session";
	argv[n++] = rd->id;
	argv[n] = NULL;
	pid_t pid = proc_spawn_listener((char *const *)argv, lfd, diag_fd);
	close(lfd);
	if (pid < 0) {
		snprintf(err, errlen, "cannot start %s: %s", bin, strerror((int)-pid));
		broker_dev_stop(b);
		return -1;
	}
	b->pid = pid;
	return 0;
}

void broker_dev_stop(struct broker_dev *b)
{
	proc_stop(&b->pid);
	if (b->sock[0])
		unlink(b->sock);
	b->sock[0] = '\0';
}
