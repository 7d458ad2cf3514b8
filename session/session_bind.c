/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_bind.c: a guest booted before its session is known (`bulkhead serve`'s
 * pool: `bulkhead start --bind-later`), bound to one scope and broker once it is taken
 * (docs/ARCHITECTURE.md, "Pooled guests").
 *
 * At boot we make the session CA (broker/mitm_ca.h) and start a private broker with the empty
 * scope, which allows nothing, presenting that CA: init installs it as at a cold start, and
 * every request before the binding is refused and audited, in <audit dir>/<id>.unbound.log.
 * We listen on <run dir>/bind.sock (0600, our uid or root). The binding is one request, one
 * JSON line:
 *
 *   {"scope": FILE[, "vault": FILE][, "ca_file": FILE][, "audit": FILE][, "broker": SOCK]}
 *
 * The scope is read once and judged as a cold session's (plan_bind); the broker it names
 * (private, or the shared one at SOCK) starts with the same CA on a new socket that then takes
 * the broker port's name in one rename (broker_dev_rebind). One answer line:
 * {"ok":true,"scope_sha256":HEX,"broker":"private"|"shared","audit":FILE|null} or
 * {"ok":false,"error":WHY}. The socket is closed after that one request, bound or not: a guest
 * is bound at most once, and one that failed is the caller's to stop. */
#include "session/session.h"

#include "broker/mitm_ca.h"
#include "broker/rules.h"
#include "lib/unix_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BIND_SOCK      "bind.sock"
#define BIND_MAX_BYTES (64 << 10) /* a binding names files, nothing more */
#define BIND_READ_S    5

static void bind_close(struct session *s)
{
	char path[PATH_MAX];
	if (s->bind_lfd >= 0) {
		close(s->bind_lfd);
		if (rundir_file(&s->rd, BIND_SOCK, 1, path, sizeof(path)) == 0)
			unlink(path);
	}
	s->bind_lfd = -1;
}

int session_bind_start(struct session *s)
{
	char dir[PATH_MAX], audit[PATH_MAX + 32], path[PATH_MAX];
	struct mitm_ca *ca = mitm_ca_new(s->rd.id, MITM_CA_LIFETIME_S, s->err, sizeof(s->err));
	if (!ca)
		return -1;
	s->ca_pem = mitm_ca_export(ca, s->err, sizeof(s->err));
	mitm_ca_free(ca);
	if (!s->ca_pem)
		return -1;
	int rc = broker_audit_dir(dir, sizeof(dir));
	if (rc < 0 || snprintf(audit, sizeof(audit), "%s/%s.unbound.log", dir, s->rd.id) >=
			      (int)sizeof(audit)) {
		snprintf(s->err, sizeof(s->err), "audit log directory: %s",
			 strerror(rc < 0 ? -rc : ENAMETOOLONG));
		return -1;
	}
	struct broker_opts o = {
		.scope = "(the empty scope: not bound yet)",
		.scope_text = "{}",
		.audit = audit,
		.policy = s->plan->req.broker.policy,
		.session_ca = s->ca_pem,
		.unbound = true,
	};
	if (broker_dev_start(&s->br, &o, &s->rd, s->diag[1], s->err, sizeof(s->err)) < 0)
		return -1;
	/* The bound broker's process, forked now and so in the session's cgroups already (a
	 * join costs more than the broker's whole start on a cgroup v1 host); its stderr is the
	 * back ends' diagnostics pipe. */
	rc = proc_spawner_new(&s->bind_spawner, s->diag[1]);
	if (rc < 0) {
		snprintf(s->err, sizeof(s->err), "the bound broker's process: %s", strerror(-rc));
		return -1;
	}
	session_watch_set(s, NULL, "bulkhead-broker", (int)syscall(SYS_pidfd_open, s->br.pid, 0));
	if (rundir_file(&s->rd, BIND_SOCK, 1, path, sizeof(path)) < 0) {
		snprintf(s->err, sizeof(s->err), "run directory path too long for a socket");
		return -1;
	}
	s->bind_lfd = unix_listen(path, 4, false);
	if (s->bind_lfd < 0 || chmod(path, 0600) < 0) {
		snprintf(s->err, sizeof(s->err), "%.300s: %s", path,
			 strerror(s->bind_lfd < 0 ? -s->bind_lfd : errno));
		return -1;
	}
	return 0;
}

/* One request line from fd, within BIND_READ_S; NULL with why. */
static json_t *read_request(int fd, char *err, size_t errlen)
{
	char *buf = malloc(BIND_MAX_BYTES + 1);
	size_t len = 0;
	struct timeval tv = { .tv_sec = BIND_READ_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (buf && len < BIND_MAX_BYTES && !memchr(buf, '\n', len)) {
		ssize_t n = recv(fd, buf + len, BIND_MAX_BYTES - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	char *nl = buf ? memchr(buf, '\n', len) : NULL;
	json_error_t je;
	json_t *o = nl ? json_loadb(buf, (size_t)(nl - buf), JSON_REJECT_DUPLICATES, &je) : NULL;
	if (!nl)
		snprintf(err, errlen, "a binding is one JSON line of at most %d bytes, within %d s",
			 BIND_MAX_BYTES, BIND_READ_S);
	else if (!json_is_object(o))
		snprintf(err, errlen, "the binding is not a JSON object");
	free(buf);
	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* The binding itself: judged, then the broker started; 0, or -1 with why. */
static int bind_session(struct session *s, json_t *req, json_t **ans, char *err, size_t errlen)
{
	struct broker_opts o = { .session_ca = s->ca_pem };
	json_error_t je;
	if (json_unpack_ex(req, &je, JSON_STRICT, "{s:s, s?:s, s?:s, s?:s, s?:s}", "scope",
			   &o.scope, "vault", &o.vault, "ca_file", &o.ca_file, "audit", &o.audit,
			   "broker", &o.shared)) {
		snprintf(err, errlen,
			 "a binding is {\"scope\": FILE, \"vault\"?, \"ca_file\"?, \"audit\"?, "
			 "\"broker\"?}: %s",
			 je.text);
		return -1;
	}
	struct session_plan bp;
	char audit[PATH_MAX], digest[65];
	int rc = -1;
	if (plan_bind(s->plan, &o, &bp, err, errlen) < 0)
		goto out;
	if (rules_digest(bp.scope_text, digest) < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (!o.shared && !o.audit && broker_audit_path(s->rd.id, audit, sizeof(audit)) < 0) {
		snprintf(err, errlen, "audit log directory: %s", strerror(errno));
		goto out;
	}
	bp.req.broker.spawner = s->bind_spawner.pid > 0 ? &s->bind_spawner : NULL;
	int started = broker_dev_rebind(&s->br, &s->br_unbound, &bp.req.broker, &s->rd, 2,
					s->jailed ? &s->ids : NULL, err, errlen);
	proc_spawner_drop(&s->bind_spawner); /* the broker's now, or unused */
	if (started < 0) {
		session_diag_last(s, err, errlen);
		goto out;
	}
	if (s->br.pid)
		session_watch_set(s, "bulkhead-broker", "bulkhead-broker",
				  (int)syscall(SYS_pidfd_open, s->br.pid, 0));
	else
		session_watch_set(s, "bulkhead-broker", "the shared broker",
				  fcntl(s->br.ctl_fd, F_DUPFD_CLOEXEC, 3));
	if (bp.end_kind == END_EXPIRY) {
		s->bound_timeout_s = bp.timeout_s;
		snprintf(s->bound_expiry, sizeof(s->bound_expiry), "%s", bp.expiry);
	}
	*ans = json_pack("{sb ss ss s:s*}", "ok", 1, "scope_sha256", digest, "broker",
			 o.shared ? "shared" : "private", "audit",
			 o.shared  ? NULL
			 : o.audit ? o.audit
				   : audit);
	rc = 0;
out:
	plan_release(&bp);
	return rc;
}

int session_bind_serve(struct session *s)
{
	char err[768] = "";
	struct ucred cr = { .uid = (uid_t)-1 };
	socklen_t crlen = sizeof(cr);
	int fd = accept4(s->bind_lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return errno == EINTR || errno == EAGAIN || errno == ECONNABORTED ? 0 : -1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
	    (cr.uid != geteuid() && cr.uid != 0)) {
		close(fd); /* not the caller that may bind us: the socket stays for that one */
		return 0;
	}
	/* One request, bound or not: the socket goes now. */
	bind_close(s);
	json_t *req = read_request(fd, err, sizeof(err)), *ans = NULL;
	if (req && bind_session(s, req, &ans, err, sizeof(err)) == 0) {
		mitm_ca_pem_free(s->ca_pem); /* the broker holds the key now */
		s->ca_pem = NULL;
	} else {
		json_decref(ans);
		ans = json_pack("{sb ss}", "ok", 0, "error", err[0] ? err : "out of memory");
		fprintf(stderr, "bulkhead: the binding was refused: %s\n", err);
	}
	json_decref(req);
	char *line = ans ? json_dumps(ans, JSON_COMPACT) : NULL;
	json_decref(ans);
	int rc = 0;
	if (!line || dprintf(fd, "%s\n", line) < 0)
		rc = -1;
	free(line);
	close(fd);
	return rc;
}

void session_bind_stop(struct session *s)
{
	bind_close(s);
	broker_dev_stop(&s->br_unbound);
	proc_spawner_drop(&s->bind_spawner);
	mitm_ca_pem_free(s->ca_pem);
	s->ca_pem = NULL;
}
