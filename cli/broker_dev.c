/* cli/broker_dev.c: start and stop the session's bulkhead-broker. Its socket is
 * created and listening before it starts (passed as a descriptor); the guest
 * reaches it only through that one vsock port. */
#include "cli/broker_dev.h"
#include "cli/paths.h"
#include "cli/proc.h"
#include "lib/agent_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
	int lfd = proc_listen_unix(b->sock, 64);
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
