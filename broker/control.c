/* SPDX-License-Identifier: Apache-2.0 */
/* broker/control.c: the broker's control socket (lib/control_proto.h). One thread per
 * connection: it checks the request's version and op, then serves it; a registration's thread
 * waits for the connection to end and revokes the session. */
#include "broker/control.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/control_proto.h"
#include "lib/unix_listen.h"

static const struct broker_common *common;
static const char *audit_dir;
static int allow_register;

/* The ids registered now: one session per id at a time. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
struct reg {
	char id[BROKER_SESSION_ID_MAX + 1];
	struct reg *next;
};
static struct reg *registered;

static int reg_add(const char *id)
{
	struct reg *r;
	int rc = 0;

	pthread_mutex_lock(&reg_lock);
	for (r = registered; r && strcmp(r->id, id); r = r->next)
		;
	if (r) {
		rc = -EEXIST;
	} else if ((r = calloc(1, sizeof(*r)))) {
		snprintf(r->id, sizeof(r->id), "%s", id);
		r->next = registered;
		registered = r;
	} else {
		rc = -ENOMEM;
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

static void reg_del(const char *id)
{
	struct reg **p;

	pthread_mutex_lock(&reg_lock);
	for (p = &registered; *p && strcmp((*p)->id, id); p = &(*p)->next)
		;
	if (*p) {
		struct reg *r = *p;

		*p = r->next;
		free(r);
	}
	pthread_mutex_unlock(&reg_lock);
}

static void reply_json(int fd, json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (s) {
		size_t n = strlen(s);

		s[n] = '\n'; /* replaces the NUL: the line is sent by length */
		if (send(fd, s, n + 1, MSG_NOSIGNAL) < 0) {
			/* the peer is gone; its session ends with the connection */
		}
		s[n] = '\0';
	}
	free(s);
}

static void reply(int fd, const char *error)
{
	json_t *o =
		error ? json_pack("{sbss}", "ok", 0, "error", error) : json_pack("{sb}", "ok", 1);

	reply_json(fd, o);
	json_decref(o);
}

/* Reads one request line; *lfd gets the descriptor that came with it (or -1). */
static char *read_request(int fd, int *lfd, char *err, size_t errlen)
{
	char *buf = malloc(CONTROL_MAX_MSG + 1);
	size_t len = 0;

	*lfd = -1;
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	while (!memchr(buf, '\n', len)) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} cbuf;
		struct iovec iov = { buf + len, CONTROL_MAX_MSG - len };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf.b,
				    .msg_controllen = sizeof(cbuf.b) };
		struct cmsghdr *c;
		ssize_t n;

		if (len == CONTROL_MAX_MSG) {
			snprintf(err, errlen, "request longer than %d bytes", CONTROL_MAX_MSG);
			goto fail;
		}
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "connection ended before a request");
			goto fail;
		}
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
				size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int fds[4] = { -1, -1, -1, -1 };

				memcpy(fds, CMSG_DATA(c), (nfd > 4 ? 4 : nfd) * sizeof(int));
				for (size_t i = 0; i < nfd && i < 4; i++) {
					if (*lfd < 0 && i == 0)
						*lfd = fds[i];
					else
						close(fds[i]); /* only one socket is expected */
				}
			}
		if (m.msg_flags & MSG_CTRUNC) {
			snprintf(err, errlen, "more descriptors than one listening socket");
			goto fail;
		}
		len += (size_t)n;
	}
	char *nl = memchr(buf, '\n', len);
	if (nl) {
		*nl = '\0';
		return buf;
	}
	snprintf(err, errlen, "request without an end of line");
fail:
	free(buf);
	if (*lfd >= 0)
		close(*lfd);
	*lfd = -1;
	return NULL;
}

/* MSG is a registration; LFD (taken) the descriptor that came with it. */
static struct broker_session *do_register(json_t *msg, int lfd, char *id, char *err, size_t errlen)
{
	char *scope = NULL;
	char audit[PATH_MAX];
	json_error_t je;
	const char *op = NULL, *sid = NULL, *ca = NULL;
	struct broker_bind bind;
	int v = 0;
	json_t *sc = NULL;
	struct rules rules = { 0 };
	struct broker_session *s = NULL;

	if (!allow_register) {
		snprintf(err, errlen, "this broker serves one session; it takes no registrations");
		goto out;
	}
	if (json_unpack_ex(msg, &je, JSON_STRICT, "{s:i, s:s, s:s, s:o, s?:s}", CONTROL_KEY_VERSION,
			   &v, CONTROL_KEY_OP, &op, "session", &sid, "scope", &sc, "ca", &ca) ||
	    !json_is_object(sc)) {
		snprintf(err, errlen,
			 "registration must be {\"v\":%d,\"op\":\"" CONTROL_OP_REGISTER
			 "\",\"session\":ID,\"scope\":{...}[,\"ca\":PEM]}",
			 CONTROL_PROTO_VERSION);
		goto out;
	}
	if (!broker_session_id_ok(sid)) {
		snprintf(err, errlen, "session id must be 1 to %d of A-Z a-z 0-9 _ -",
			 BROKER_SESSION_ID_MAX);
		goto out;
	}
	snprintf(id, BROKER_SESSION_ID_MAX + 1, "%s", sid);
	if (lfd < 0 || unix_listen_check(lfd, false) < 0) {
		snprintf(err, errlen, "the registration must carry the session's listening socket");
		goto out;
	}
	scope = json_dumps(sc, JSON_COMPACT);
	if (!scope || rules_load_json(&rules, scope, err, errlen))
		goto out;
	bind.ca_pem = ca;
	if (ca && rules_digest(scope, bind.scope_sha256) < 0) {
		snprintf(err, errlen, "out of memory");
		rules_free(&rules);
		goto out;
	}
	/* The organisation's backstop: a scope may not ask for what the policy forbids. */
	if (policy_check_scope(common->policy, &rules, err, errlen)) {
		rules_free(&rules);
		goto out;
	}
	if (audit_dir &&
	    snprintf(audit, sizeof(audit), "%s/%s.log", audit_dir, id) >= (int)sizeof(audit)) {
		snprintf(err, errlen, "audit log path too long");
		rules_free(&rules);
		goto out;
	}
	if (reg_add(id) < 0) {
		snprintf(err, errlen, "session %s is already registered", id);
		rules_free(&rules);
		goto out;
	}
	s = broker_session_start(common, id, &rules, lfd, audit_dir ? audit : NULL,
				 ca ? &bind : NULL, err, errlen);
	lfd = -1; /* the session's now, or closed */
	if (!s)
		reg_del(id);
out:
	if (lfd >= 0)
		close(lfd);
	free(scope);
	return s;
}

/* register: answers, then holds the session for as long as the connection stays open. */
static void serve_register(int fd, json_t *msg, int lfd)
{
	char id[BROKER_SESSION_ID_MAX + 1] = "", err[512], b[256];
	struct broker_session *s = do_register(msg, lfd, id, err, sizeof(err));

	if (!s) {
		fprintf(stderr, "bulkhead-broker: registration refused: %s\n", err);
		reply(fd, err);
		return;
	}
	fprintf(stderr, "bulkhead-broker: session %s registered\n", id);
	reply(fd, NULL);
	/* The session lives as long as this connection; anything sent now is a protocol error
	 * and ends it too. */
	while (recv(fd, b, sizeof(b), 0) < 0 && errno == EINTR)
		;
	broker_session_end(s);
	reg_del(id);
	fprintf(stderr, "bulkhead-broker: session %s ended: its sockets and state are gone\n", id);
}

/* approvals.list: every request held now. */
static void serve_approvals_list(int fd, json_t *msg, int lfd)
{
	const char *op = NULL;
	int v = 0;
	json_t *ans;

	if (lfd >= 0)
		close(lfd);
	if (json_unpack_ex(msg, NULL, JSON_STRICT, "{s:i, s:s}", CONTROL_KEY_VERSION, &v,
			   CONTROL_KEY_OP, &op)) {
		reply(fd, CONTROL_OP_APPROVALS_LIST " takes no argument");
		return;
	}
	if (!common->approvals) {
		reply(fd, "this broker holds no approvals");
		return;
	}
	ans = json_pack("{sbso}", "ok", 1, "approvals", approvals_list(common->approvals));
	reply_json(fd, ans);
	json_decref(ans);
}

/* approvals.decide: approve or deny one held request. */
static void serve_approvals_decide(int fd, json_t *msg, int lfd)
{
	const char *op = NULL, *id = NULL, *reason = NULL;
	char err[256];
	int v = 0, approve = 0;

	if (lfd >= 0)
		close(lfd);
	if (json_unpack_ex(msg, NULL, JSON_STRICT, "{s:i, s:s, s:s, s:b, s?:s}",
			   CONTROL_KEY_VERSION, &v, CONTROL_KEY_OP, &op, "id", &id, "approve",
			   &approve, "reason", &reason)) {
		reply(fd, CONTROL_OP_APPROVALS_DECIDE " takes {id, approve, reason}");
		return;
	}
	if (!common->approvals) {
		reply(fd, "this broker holds no approvals");
		return;
	}
	if (approvals_decide(common->approvals, id, approve, reason, err, sizeof(err)) < 0) {
		reply(fd, err);
		return;
	}
	fprintf(stderr, "bulkhead-broker: approval %s %s%s%s\n", id,
		approve ? "approved" : "denied", reason ? ": " : "", reason ? reason : "");
	reply(fd, NULL);
}

/* Every operation of lib/control_proto.h: one handler each, which answers the request and
 * takes the descriptor that came with it. */
static const struct control_op {
	const char *name;
	void (*serve)(int fd, json_t *msg, int lfd);
} control_ops[] = {
	{ CONTROL_OP_REGISTER, serve_register },
	{ CONTROL_OP_APPROVALS_LIST, serve_approvals_list },
	{ CONTROL_OP_APPROVALS_DECIDE, serve_approvals_decide },
};

/* The request in LINE, if it is one this broker speaks: a JSON object of our version naming a
 * known op. Otherwise NULL, with why in err. */
static const struct control_op *parse_request(const char *line, json_t **msg, char *err,
					      size_t errlen)
{
	json_error_t je;
	json_t *v;
	const char *op;

	*msg = json_loads(line, JSON_REJECT_DUPLICATES, &je);
	if (!*msg) {
		snprintf(err, errlen, "not JSON: column %d: %s", je.column, je.text);
		return NULL;
	}
	v = json_object_get(*msg, CONTROL_KEY_VERSION);
	if (!json_is_integer(v)) {
		snprintf(err, errlen,
			 "a request needs \"" CONTROL_KEY_VERSION
			 "\":%d, the control protocol's version",
			 CONTROL_PROTO_VERSION);
		return NULL;
	}
	if (json_integer_value(v) != CONTROL_PROTO_VERSION) {
		snprintf(err, errlen,
			 "control protocol version %lld: this broker speaks version %d",
			 (long long)json_integer_value(v), CONTROL_PROTO_VERSION);
		return NULL;
	}
	op = json_string_value(json_object_get(*msg, CONTROL_KEY_OP));
	if (!op) {
		snprintf(err, errlen, "a request needs an \"" CONTROL_KEY_OP "\"");
		return NULL;
	}
	for (size_t i = 0; i < sizeof(control_ops) / sizeof(control_ops[0]); i++)
		if (!strcmp(op, control_ops[i].name))
			return &control_ops[i];
	snprintf(err, errlen,
		 "unknown op \"%.64s\" (this broker knows " CONTROL_OP_REGISTER
		 ", " CONTROL_OP_APPROVALS_LIST ", " CONTROL_OP_APPROVALS_DECIDE ")",
		 op);
	return NULL;
}

static void *control_thread(void *arg)
{
	int fd = (int)(intptr_t)arg, lfd = -1;
	char err[512];
	char *line = read_request(fd, &lfd, err, sizeof(err));
	json_t *msg = NULL;
	const struct control_op *op = line ? parse_request(line, &msg, err, sizeof(err)) : NULL;

	free(line);
	if (op) {
		op->serve(fd, msg, lfd);
	} else {
		if (lfd >= 0)
			close(lfd);
		fprintf(stderr, "bulkhead-broker: control request refused: %s\n", err);
		reply(fd, err);
	}
	json_decref(msg);
	close(fd);
	return NULL;
}

/* The control socket at PATH. A socket file left by a broker that died is replaced (nothing
 * answers on it); one a live broker answers on is refused, and so is anything not a socket. */
static int control_listen(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int lfd = unix_listen(path, 64, false), probe;

	if (lfd == -EADDRINUSE && !lstat(path, &st) && S_ISSOCK(st.st_mode)) {
		probe = unix_connect(path, false);
		if (probe >= 0) {
			close(probe);
			snprintf(err, errlen,
				 "cannot listen on %s: a broker is already serving there", path);
			return -1;
		}
		if (probe == -ECONNREFUSED && !unlink(path)) {
			fprintf(stderr,
				"bulkhead-broker: %s was left by a broker that is gone; replacing "
				"it\n",
				path);
			lfd = unix_listen(path, 64, false);
		}
	}
	if (lfd < 0)
		snprintf(err, errlen, "cannot listen on %s: %s%s", path, strerror(-lfd),
			 lfd == -EADDRINUSE ? " (a file that is not a broker's socket is there)"
					    : "");
	return lfd;
}

int control_serve(const char *path, const struct broker_common *c, const char *dir,
		  int registrations, char *err, size_t errlen)
{
	pthread_attr_t attr;
	int lfd;

	common = c;
	audit_dir = dir;
	allow_register = registrations;
	lfd = control_listen(path, err, errlen);
	if (lfd < 0)
		return -1;
	if (chmod(path, 0600) < 0) {
		snprintf(err, errlen, "chmod %s: %s", path, strerror(errno));
		close(lfd);
		return -1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	fprintf(stderr, "bulkhead-broker: control socket %s\n", path);
	for (;;) {
		struct ucred cr = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
		socklen_t crlen = sizeof(cr);
		pthread_t t;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(10000);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
		    (cr.uid != geteuid() && cr.uid != 0)) {
			fprintf(stderr, "bulkhead-broker: control connection from uid %d refused\n",
				(int)cr.uid);
			close(fd);
			continue;
		}
		if (pthread_create(&t, &attr, control_thread, (void *)(intptr_t)fd))
			close(fd);
	}
}
