/* SPDX-License-Identifier: Apache-2.0 */
/* session/broker_dev.c: the session's broker — a private bulkhead-broker, or a registration with a
 * shared one. Either way its socket is created and listening before (passed as a descriptor);
 * the guest reaches it only through that one vsock port. */
#include "session/broker_dev.h"
#include "session/paths.h"
#include "jail/proc.h"
#include "lib/unix_listen.h"
#include "lib/agent_proto.h"
#include "lib/control_proto.h"
#include "lib/fd_send.h"
#include "lib/io.h"
#include "lib/mkdirs.h"

#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int broker_audit_dir_path(char *dir, size_t len)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	int n = state && *state ? snprintf(dir, len, "%s/bulkhead/audit", state)
				: snprintf(dir, len, "%s/.local/state/bulkhead/audit",
					   home && *home ? home : "/root");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int broker_audit_dir(char *dir, size_t len)
{
	int rc = broker_audit_dir_path(dir, len);
	return rc < 0 ? rc : mkdirs(dir, 0700);
}

/* <audit dir>/<session id>.log: one chain per session (a log is locked by the broker that
 * writes it), kept after the session. */
int broker_audit_path(const char *id, char *buf, size_t len)
{
	char dir[PATH_MAX];
	int rc = broker_audit_dir(dir, sizeof(dir));
	if (rc < 0)
		return rc;
	int n = snprintf(buf, len, "%s/%s.log", dir, id);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Registers the session with the shared broker at o->shared (lib/control_proto.h): the scope
 * and the listening socket LFD go over; the connection stays open for the session's life. */
static int register_shared(struct broker_dev *b, const struct broker_opts *o,
			   const struct rundir *rd, int lfd, char *err, size_t errlen)
{
	json_error_t je;
	json_t *scope = json_loads(o->scope_text, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(scope)) {
		snprintf(err, errlen, "--scope %s: line %d, column %d: %s", o->scope, je.line,
			 je.column, scope ? "must be a JSON object" : je.text);
		json_decref(scope);
		return -1;
	}
	json_t *msg = json_pack("{s:i, s:s, s:s, s:o, s:s*}", CONTROL_KEY_VERSION,
				CONTROL_PROTO_VERSION, CONTROL_KEY_OP, CONTROL_OP_REGISTER,
				"session", rd->id, "scope", scope, "ca", o->session_ca);
	char *line = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	size_t linelen = line ? strlen(line) : 0;
	int fd = line ? unix_connect(o->shared, false) : -ENOMEM;
	if (fd < 0) {
		snprintf(err, errlen,
			 "cannot reach the shared broker at %s: %s (is 'bulkhead broker' running?)",
			 o->shared, strerror(-fd));
		goto fail;
	}
	size_t n = strlen(line);
	line[n] = '\n';
	ssize_t w = fd_send(fd, line, n + 1, lfd);
	/* The rest of a long scope follows without the descriptor. */
	for (size_t off = w > 0 ? (size_t)w : 0; w > 0 && off < n + 1; off += (size_t)w)
		w = send(fd, line + off, n + 1 - off, MSG_NOSIGNAL);
	if (w <= 0) {
		snprintf(err, errlen, "shared broker at %s: %s", o->shared, strerror(errno));
		goto fail;
	}
	/* One answer line; a broker that says nothing within the time is treated as dead. */
	char ans[1024] = "";
	size_t got = 0;
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < sizeof(ans) - 1 && !memchr(ans, '\n', got)) {
		ssize_t r = recv(fd, ans + got, sizeof(ans) - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	ans[got] = '\0';
	json_t *a = json_loads(ans, JSON_DISABLE_EOF_CHECK, &je);
	int ok = 0;
	const char *why = NULL;
	if (json_unpack(a, "{sb}", "ok", &ok) < 0) {
		snprintf(err, errlen, "the shared broker at %s gave no valid answer", o->shared);
	} else if (!ok) {
		json_unpack(a, "{ss}", "error", &why);
		snprintf(err, errlen, "the shared broker refused the session: %s",
			 why ? why : "no reason given");
	}
	json_decref(a);
	if (!ok)
		goto fail;
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	explicit_bzero(line, linelen); /* it may hold the session CA's key */
	free(line);
	b->ctl_fd = fd;
	return 0;
fail:
	if (line)
		explicit_bzero(line, linelen);
	free(line);
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The session CA for a private broker's descriptor 4: a sealed memory file, read once. */
static int ca_fd(const char *pem)
{
	int fd = memfd_create("bulkhead-session-ca", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd >= 0 && (io_write_full(fd, pem, strlen(pem)) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
			fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK) < 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A private broker has started its session once its control socket is there (it listens
 * after the session's rules, CA, vault and audit log are loaded); one that exits first did not.
 * 0, or -1 with err. */
static int wait_started(struct broker_dev *b, const struct rundir *rd, char *err, size_t errlen)
{
	char ctl[PATH_MAX];
	struct stat st;
	int status;
	if (rundir_file(rd, "broker.ctl", 1, ctl, sizeof(ctl)) < 0) {
		snprintf(err, errlen, "run directory path too long for a socket");
		return -1;
	}
	for (int i = 0; i < BROKER_START_MS; i++) {
		if (stat(ctl, &st) == 0 && S_ISSOCK(st.st_mode))
			return 0;
		if (waitpid(b->pid, &status, WNOHANG) == b->pid) {
			b->pid = 0;
			snprintf(err, errlen, "bulkhead-broker stopped (status %d)",
				 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
			return -1;
		}
		usleep(1000);
	}
	snprintf(err, errlen, "bulkhead-broker did not start within %d s", BROKER_START_MS / 1000);
	return -1;
}

/* Starts the broker on the socket NAME in the run directory. */
static int start_at(struct broker_dev *b, const char *name, const struct broker_opts *o,
		    const struct rundir *rd, int diag_fd, char *err, size_t errlen)
{
	char bin[PATH_MAX];
	b->pid = 0;
	b->ctl_fd = -1;
	if (paths_join(bin, sizeof(bin), paths_bindir(), "bulkhead-broker") < 0 ||
	    access(bin, X_OK) < 0) {
		snprintf(err, errlen, "bulkhead-broker not found next to bulkhead (run make)");
		return -1;
	}
	if (!o->scope_text) {
		snprintf(err, errlen, "internal error: --scope %s was not read", o->scope);
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
	if (o->shared) {
		int rc = register_shared(b, o, rd, lfd, err, errlen);
		close(lfd); /* the shared broker has its own copy now */
		return rc;
	}
	/* The private broker reads the scope the plan read (and judged), from the run directory:
	 * a later change to the caller's file changes nothing. */
	char rules[PATH_MAX];
	if (rundir_put(rd, "scope.json", o->scope_text) < 0 ||
	    rundir_file(rd, "scope.json", 0, rules, sizeof(rules)) < 0) {
		snprintf(err, errlen, "the scope's copy in the run directory: %s", strerror(errno));
		close(lfd);
		return -1;
	}
	const char *argv[24];
	int n = 0;
	argv[n++] = bin;
	argv[n++] = "--listen-fd";
	argv[n++] = "3";
	argv[n++] = "--rules";
	argv[n++] = rules;
	if (o->vault) {
		argv[n++] = "--vault";
		argv[n++] = o->vault;
	}
	if (o->ca_file) {
		argv[n++] = "--ca-file";
		argv[n++] = o->ca_file;
	}
	char audit[PATH_MAX];
	int arc = o->audit ? 0 : broker_audit_path(rd->id, audit, sizeof(audit));
	if (arc < 0) {
		snprintf(err, errlen, "audit log directory: %s", strerror(-arc));
		close(lfd);
		return -1;
	}
	argv[n++] = "--audit";
	argv[n++] = o->audit ? o->audit : audit;
	argv[n++] = "--session";
	argv[n++] = rd->id;
	/* `bulkhead approvals` finds a private broker at <run dir>/broker.ctl. */
	char ctl[PATH_MAX];
	if (rundir_file(rd, "broker.ctl", 1, ctl, sizeof(ctl)) < 0) {
		snprintf(err, errlen, "run directory path too long for a socket");
		close(lfd);
		return -1;
	}
	if (!o->unbound) {
		argv[n++] = "--control";
		argv[n++] = ctl;
	}
	if (o->policy) {
		argv[n++] = "--policy";
		argv[n++] = o->policy;
	}
	int cafd = -1;
	if (o->session_ca) {
		argv[n++] = "--session-ca-fd";
		argv[n++] = "4";
		if ((cafd = ca_fd(o->session_ca)) < 0) {
			snprintf(err, errlen, "the session CA's descriptor: %s", strerror(errno));
			close(lfd);
			return -1;
		}
	}
	argv[n] = NULL;
	pid_t pid;
	if (o->spawner) {
		int rc = proc_spawner_exec(o->spawner, (char *const *)argv, lfd, cafd);
		pid = rc < 0 ? rc : o->spawner->pid;
	} else {
		pid = proc_spawn_listener((char *const *)argv, lfd, cafd, diag_fd);
	}
	close(lfd);
	if (cafd >= 0)
		close(cafd);
	if (pid < 0) {
		snprintf(err, errlen, "cannot start %s: %s", bin, strerror((int)-pid));
		broker_dev_stop(b);
		return -1;
	}
	b->pid = pid;
	/* Started means its session loaded (vault, CA, audit log): a session never runs on a
	 * broker that is about to die. The empty broker of a pool guest has nothing to load. */
	if (!o->unbound && wait_started(b, rd, err, errlen) < 0) {
		broker_dev_stop(b);
		return -1;
	}
	return 0;
}

int broker_dev_start(struct broker_dev *b, const struct broker_opts *o, const struct rundir *rd,
		     int diag_fd, char *err, size_t errlen)
{
	char name[32];
	snprintf(name, sizeof(name), RUNDIR_VSOCK "/vsock.sock_%d", BROKER_VSOCK_PORT);
	return start_at(b, name, o, rd, diag_fd, err, errlen);
}

int broker_dev_rebind(struct broker_dev *b, struct broker_dev *old, const struct broker_opts *o,
		      const struct rundir *rd, int diag_fd, const struct jail_ids *jail, char *err,
		      size_t errlen)
{
	char name[40];
	struct broker_dev next = { .ctl_fd = -1 };
	snprintf(name, sizeof(name), RUNDIR_VSOCK "/vsock.sock_%d.bind", BROKER_VSOCK_PORT);
	if (start_at(&next, name, o, rd, diag_fd, err, errlen) < 0) {
		broker_dev_stop(&next);
		return -1;
	}
	if ((jail && jail->uid != geteuid() && chown(next.sock, jail->uid, jail->gid) < 0) ||
	    rename(next.sock, b->sock) < 0) {
		snprintf(err, errlen, "the broker socket's chown or rename: %s", strerror(errno));
		broker_dev_stop(&next);
		return -1;
	}
	snprintf(next.sock, sizeof(next.sock), "%s", b->sock);
	*old = *b;
	old->sock[0] = '\0'; /* the name is the new broker's now */
	*b = next;
	return 0;
}

void broker_dev_stop(struct broker_dev *b)
{
	proc_stop(&b->pid);
	/* Closing the control connection revokes the session in the shared broker. */
	if (b->ctl_fd >= 0)
		close(b->ctl_fd);
	b->ctl_fd = -1;
	if (b->sock[0])
		unlink(b->sock);
	b->sock[0] = '\0';
}
