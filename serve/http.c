/* SPDX-License-Identifier: Apache-2.0 */
/* serve/http.c: the API over libmicrohttpd — a thread per connection on our Unix socket.
 * Each request: its peer checked (SO_PEERCRED) before anything else, its route found, its
 * body gathered (JSON: at most 1 MiB) or streamed (uploads, an exec's stdin), then one
 * answer. Every error is {"error": "..."} with the status docs/API.md gives. */
#include "serve/files.h"
#include "serve/serve.h"
#include "session/approvals.h"
#include "lib/json_strict.h"
#include "lib/signame.h"

#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY_MAX (1 << 20)

enum route {
	R_NONE,
	R_HEALTH,
	R_POOL,
	R_SESSIONS,
	R_SESSION,
	R_EXEC,
	R_FILE,
	R_ARCHIVE,
	R_EVENTS,
	R_APPROVALS,
	R_APPROVAL_DECIDE,
	R_EXEC_STDIN,
	R_EXEC_SIGNAL,
	R_EXEC_RESIZE,
};

struct req {
	enum route route;
	const char *method;
	char id[64];
	char rest[PATH_MAX]; /* a file's path, an archive's directory, approve|deny */
	char *body;
	size_t len;
	int status; /* != 0: failed already; answered at the end */
	char why[512];
	struct serve_peer peer;
	struct serve_upload *up;
	struct serve_session *sess; /* held for an upload */
};

static struct MHD_Daemon *daemon_;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	size_t n = s ? strlen(s) : 0;
	if (s) {
		char *t = realloc(s, n + 2);
		if (t) {
			s = t;
			s[n++] = '\n';
		}
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(
		n, s ? s : (char *)"", s ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	if (s)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	/* A refused peer's connection does not stay open holding a thread. */
	if (status == MHD_HTTP_FORBIDDEN)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *why)
{
	/* Reasons may quote what a client sent (a URL, a path): printable ASCII only, so the
	 * answer is always valid JSON. */
	char line[512];
	size_t n = 0;
	for (; why[n] && n < sizeof(line) - 1; n++)
		line[n] = why[n] >= 0x20 && why[n] <= 0x7e ? why[n] : '?';
	line[n] = '\0';
	return reply(c, status, json_pack("{ss}", "error", line));
}

static enum MHD_Result reply_stream(struct MHD_Connection *c, struct MHD_Response *r,
				    const char *type)
{
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

static bool is_id(const char *s, size_t n)
{
	return n > 0 && n < 64 && strspn(s, "0123456789abcdefghijklmnopqrstuvwxyz-_") >= n;
}

/* Splits url into the route, an id and the rest. */
static enum route route_of(const char *url, struct req *q)
{
	static const struct {
		const char *prefix;
		enum route with_id, bare;
	} tops[] = {
		{ "/v1/sessions", R_SESSION, R_SESSIONS },
		{ "/v1/approvals", R_APPROVAL_DECIDE, R_APPROVALS },
		{ "/v1/execs", R_NONE, R_NONE },
	};
	if (!strcmp(url, "/v1/health"))
		return R_HEALTH;
	if (!strcmp(url, "/v1/pool"))
		return R_POOL;
	if (!strcmp(url, "/v1/events"))
		return R_EVENTS;
	for (size_t t = 0; t < 3; t++) {
		size_t pl = strlen(tops[t].prefix);
		if (strncmp(url, tops[t].prefix, pl) || (url[pl] && url[pl] != '/'))
			continue;
		if (!url[pl] || !url[pl + 1])
			return tops[t].bare;
		const char *id = url + pl + 1, *slash = strchr(id, '/');
		size_t n = slash ? (size_t)(slash - id) : strlen(id);
		if (!is_id(id, n))
			return R_NONE;
		memcpy(q->id, id, n);
		q->id[n] = '\0';
		const char *sub = slash ? slash + 1 : NULL;
		if (t == 0) {
			if (!sub)
				return R_SESSION;
			if (!strcmp(sub, "exec"))
				return R_EXEC;
			const char *kinds[] = { "files", "archive" };
			for (int k = 0; k < 2; k++) {
				size_t kl = strlen(kinds[k]);
				if (strncmp(sub, kinds[k], kl) || (sub[kl] && sub[kl] != '/'))
					continue;
				const char *rel = sub[kl] ? sub + kl + 1 : "";
				if (strlen(rel) >= sizeof(q->rest))
					return R_NONE;
				snprintf(q->rest, sizeof(q->rest), "%s", rel);
				return k == 0 ? R_FILE : R_ARCHIVE;
			}
			return R_NONE;
		}
		if (t == 1)
			return sub && (!strcmp(sub, "approve") || !strcmp(sub, "deny"))
				       ? (snprintf(q->rest, sizeof(q->rest), "%s", sub),
					  R_APPROVAL_DECIDE)
				       : R_NONE;
		if (sub && !strcmp(sub, "stdin"))
			return R_EXEC_STDIN;
		if (sub && !strcmp(sub, "signal"))
			return R_EXEC_SIGNAL;
		if (sub && !strcmp(sub, "resize"))
			return R_EXEC_RESIZE;
		return R_NONE;
	}
	return R_NONE;
}

/* The methods each route takes ("GET,POST"). */
static const char *methods_of(enum route r)
{
	switch (r) {
	case R_SESSIONS:
		return "GET,POST";
	case R_SESSION:
		return "GET,DELETE";
	case R_FILE:
	case R_ARCHIVE:
		return "GET,PUT";
	case R_EXEC:
	case R_APPROVAL_DECIDE:
	case R_EXEC_STDIN:
	case R_EXEC_SIGNAL:
	case R_EXEC_RESIZE:
		return "POST";
	default:
		return "GET";
	}
}

static bool method_ok(enum route r, const char *m)
{
	const char *list = methods_of(r);
	size_t n = strlen(m);
	for (const char *p = list; (p = strstr(p, m)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static bool peer_allowed(struct MHD_Connection *c, struct serve_peer *peer, char *why,
			 size_t whylen)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		snprintf(why, whylen, "cannot tell who is asking");
		return false;
	}
	peer->uid = cr.uid;
	peer->gid = cr.gid;
	if (cr.uid == 0 || cr.uid == geteuid())
		return true;
	for (size_t i = 0; i < serve.nallow; i++)
		if (serve.allow[i] == cr.uid)
			return true;
	snprintf(why, whylen, "uid %u may not use this daemon (see --allow-uid)", (unsigned)cr.uid);
	return false;
}

static int client_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* The body as a JSON object; NULL with q->status. Empty: {}. */
static json_t *body_json(struct req *q)
{
	if (!q->len)
		return json_object();
	json_error_t je;
	json_t *o = json_loadb(q->body, q->len, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o)) {
		q->status = 400;
		if (o)
			snprintf(q->why, sizeof(q->why), "the body must be a JSON object");
		else
			snprintf(q->why, sizeof(q->why), "malformed JSON at line %d column %d: %s",
				 je.line, je.column, je.text);
		json_decref(o);
		return NULL;
	}
	return o;
}

static enum MHD_Result on_sessions(struct MHD_Connection *c, struct req *q)
{
	if (!strcmp(q->method, "GET"))
		return reply(c, 200, serve_sessions_json(&q->peer));
	json_t *body = body_json(q);
	if (!body)
		return reply_error(c, (unsigned)q->status, q->why);
	struct serve_create cr;
	int status = 400;
	struct serve_session *s = NULL;
	if (serve_create_parse(body, &cr, q->why, sizeof(q->why)) == 0)
		s = serve_create(&cr, &q->peer, &status, q->why, sizeof(q->why));
	json_decref(body);
	if (!s)
		return reply_error(c, (unsigned)status, q->why);
	pthread_mutex_lock(&serve.lock);
	json_t *o = serve_session_json(s);
	pthread_mutex_unlock(&serve.lock);
	serve_session_put(s);
	return reply(c, 201, o);
}

static enum MHD_Result on_session(struct MHD_Connection *c, struct req *q)
{
	if (!strcmp(q->method, "DELETE")) {
		json_t *o = NULL;
		if (serve_delete(q->id, &q->peer, &o) == 404)
			return reply_error(c, 404, "no such session");
		return reply(c, 200, o);
	}
	struct serve_session *s = serve_session_get(q->id, &q->peer);
	if (!s)
		return reply_error(c, 404, "no such session");
	pthread_mutex_lock(&serve.lock);
	json_t *o = serve_session_json(s);
	pthread_mutex_unlock(&serve.lock);
	serve_session_put(s);
	return reply(c, 200, o);
}

static enum MHD_Result on_exec(struct MHD_Connection *c, struct req *q)
{
	json_t *body = body_json(q);
	if (!body)
		return reply_error(c, (unsigned)q->status, q->why);
	struct serve_session *s = serve_session_get(q->id, &q->peer);
	if (!s) {
		json_decref(body);
		return reply_error(c, 404, "no such session");
	}
	pthread_mutex_lock(&serve.lock);
	bool ended = s->ended;
	pthread_mutex_unlock(&serve.lock);
	if (ended) {
		serve_session_put(s);
		json_decref(body);
		return reply_error(c, 409, "the session has ended");
	}
	int status;
	struct MHD_Response *r =
		serve_exec_response(s, body, client_fd(c), &status, q->why, sizeof(q->why));
	json_decref(body);
	if (!r)
		return reply_error(c, (unsigned)status, q->why);
	return reply_stream(c, r, "application/x-ndjson");
}

static enum MHD_Result on_get_file(struct MHD_Connection *c, struct req *q)
{
	struct serve_session *s = serve_session_get(q->id, &q->peer);
	if (!s)
		return reply_error(c, 404, "no such session");
	int status = 500;
	struct MHD_Response *r =
		q->route == R_FILE
			? serve_file_response(s->work, q->rest, &status, q->why, sizeof(q->why))
			: serve_archive_response(s->work, q->rest, serve.state, &status, q->why,
						 sizeof(q->why));
	serve_session_put(s);
	if (!r)
		return reply_error(c, (unsigned)status, q->why);
	return reply_stream(c, r,
			    q->route == R_FILE ? "application/octet-stream" : "application/x-tar");
}

/* The first call of a PUT: its upload starts (or fails, answered at the end). */
static void upload_start(struct MHD_Connection *c, struct req *q)
{
	q->sess = serve_session_get(q->id, &q->peer);
	if (!q->sess) {
		q->status = 404;
		snprintf(q->why, sizeof(q->why), "no such session");
		return;
	}
	if (q->sess->work_ro) {
		q->status = 409;
		snprintf(q->why, sizeof(q->why), "the session's work directory is read-only");
		return;
	}
	const char *m = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "mode");
	char *end = NULL;
	long mode = m ? strtol(m, &end, 8) : 0644;
	if (m && (!*m || *end || mode < 0 || mode > 0777)) {
		q->status = 400;
		snprintf(q->why, sizeof(q->why), "mode must be octal permission bits (0644)");
		return;
	}
	q->up = serve_upload_start(q->sess->work, q->rest, q->route == R_ARCHIVE, (mode_t)mode,
				   serve.state, &q->status, q->why, sizeof(q->why));
}

static enum MHD_Result on_put_done(struct MHD_Connection *c, struct req *q)
{
	unsigned long long n = 0;
	int rc = serve_upload_finish(q->up, true, &n, q->why, sizeof(q->why));
	q->up = NULL;
	if (rc)
		return reply_error(c, (unsigned)rc, q->why);
	return reply(c, 201,
		     q->route == R_FILE
			     ? json_pack("{sssI}", "path", q->rest, "size", (json_int_t)n)
			     : json_pack("{sI}", "entries", (json_int_t)n));
}

/* "signal": a name ("TERM", "SIGTERM") or a number. 0: none. */
static int signal_number(json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v) >= 1 && json_integer_value(v) <= SIGRTMAX
			       ? (int)json_integer_value(v)
			       : 0;
	const char *s = json_string_value(v);
	return s && !isdigit((unsigned char)s[0]) ? signame_parse(s) : 0;
}

static enum MHD_Result on_exec_control(struct MHD_Connection *c, struct req *q)
{
	int rc;
	if (q->route == R_EXEC_STDIN) {
		const char *eof = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "eof");
		rc = serve_exec_stdin(q->id, &q->peer, q->body ? q->body : "", q->len,
				      eof && strcmp(eof, "0"), q->why, sizeof(q->why));
	} else {
		json_t *b = body_json(q);
		if (!b)
			return reply_error(c, (unsigned)q->status, q->why);
		const char *keys_sig[] = { "signal", NULL }, *keys_win[] = { "rows", "cols", NULL };
		const char *bad =
			json_strict_unknown(b, q->route == R_EXEC_SIGNAL ? keys_sig : keys_win);
		int sig = signal_number(json_object_get(b, "signal"));
		json_t *r = json_object_get(b, "rows"), *co = json_object_get(b, "cols");
		if (bad) {
			snprintf(q->why, sizeof(q->why), "unknown field \"%s\"", bad);
			rc = 400;
		} else if (q->route == R_EXEC_SIGNAL && !sig) {
			snprintf(q->why, sizeof(q->why), "\"signal\": a name (TERM) or 1..64");
			rc = 400;
		} else if (q->route == R_EXEC_RESIZE &&
			   (!json_is_integer(r) || !json_is_integer(co) ||
			    json_integer_value(r) < 1 || json_integer_value(r) > 65535 ||
			    json_integer_value(co) < 1 || json_integer_value(co) > 65535)) {
			snprintf(q->why, sizeof(q->why), "\"rows\" and \"cols\": 1..65535");
			rc = 400;
		} else {
			rc = serve_exec_control(
				q->id, &q->peer, q->route == R_EXEC_SIGNAL ? 's' : 'w',
				sig ? sig : (int)json_integer_value(r), (int)json_integer_value(co),
				q->why, sizeof(q->why));
		}
		json_decref(b);
	}
	if (rc)
		return reply_error(c, (unsigned)rc, q->why);
	return reply(c, 204, NULL);
}

static enum MHD_Result on_approvals(struct MHD_Connection *c, struct req *q)
{
	/* Approvals are the operator's: a held request may carry any session's secrets' use. */
	if (!serve_peer_admin(&q->peer))
		return reply_error(c, 403, "approvals are for root and the daemon's uid");
	json_t *all = approvals_collect(NULL);
	if (q->route == R_APPROVALS)
		return reply(c, 200, json_pack("{so}", "approvals", all));
	json_t *b = body_json(q), *a = approvals_find(all, q->id);
	const char *keys[] = { "reason", NULL }, *bad = b ? json_strict_unknown(b, keys) : NULL;
	json_t *reason = b ? json_object_get(b, "reason") : NULL;
	unsigned status = 204;
	if (!b) {
		status = (unsigned)q->status;
	} else if (bad || (reason && !json_is_string(reason))) {
		status = 400;
		snprintf(q->why, sizeof(q->why), "the body may hold only \"reason\" (a string)");
	} else if (!a) {
		status = 404;
		snprintf(q->why, sizeof(q->why), "no pending approval %s", q->id);
	} else if (approvals_decide(a, !strcmp(q->rest, "approve"), json_string_value(reason),
				    q->why, sizeof(q->why)) < 0) {
		status = 409;
	}
	json_decref(b);
	json_decref(all);
	return status == 204 ? reply(c, 204, NULL) : reply_error(c, status, q->why);
}

static enum MHD_Result dispatch(struct MHD_Connection *c, struct req *q)
{
	if (q->status)
		return reply_error(c, (unsigned)q->status, q->why);
	switch (q->route) {
	case R_HEALTH: {
		pthread_mutex_lock(&serve.lock);
		unsigned n = serve.nsessions;
		pthread_mutex_unlock(&serve.lock);
		return reply(c, 200,
			     json_pack("{sb ss si so}", "ok", 1, "version", "1", "sessions", (int)n,
				       "pool", serve_pool_json()));
	}
	case R_POOL:
		return reply(c, 200, serve_pool_json());
	case R_SESSIONS:
		return on_sessions(c, q);
	case R_SESSION:
		return on_session(c, q);
	case R_EXEC:
		return on_exec(c, q);
	case R_FILE:
	case R_ARCHIVE:
		return !strcmp(q->method, "GET") ? on_get_file(c, q) : on_put_done(c, q);
	case R_EVENTS: {
		const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
		char *end = NULL;
		long long n = since ? strtoll(since, &end, 10) : -1;
		if (since && (!*since || *end || n < 0))
			return reply_error(c, 400, "since must be an event's seq");
		struct MHD_Response *r = serve_events_response(n, client_fd(c), &q->peer);
		return r ? reply_stream(c, r, "application/x-ndjson")
			 : reply_error(c, 500, "out of memory");
	}
	case R_APPROVALS:
	case R_APPROVAL_DECIDE:
		return on_approvals(c, q);
	case R_EXEC_STDIN:
	case R_EXEC_SIGNAL:
	case R_EXEC_RESIZE:
		return on_exec_control(c, q);
	default:
		return reply_error(c, 404, "no such resource");
	}
}

/* A piece of the body: gathered (JSON, stdin), or fed to the upload. */
static void body_piece(struct req *q, const char *data, size_t n)
{
	if (q->status)
		return; /* failed: the rest is read and dropped */
	if (q->up) {
		q->status = serve_upload_feed(q->up, data, n, q->why, sizeof(q->why));
		return;
	}
	if (q->len + n > BODY_MAX) {
		q->status = 413;
		snprintf(q->why, sizeof(q->why), "the body is over %d bytes", BODY_MAX);
		return;
	}
	char *b = realloc(q->body, q->len + n + 1);
	if (!b) {
		q->status = 500;
		snprintf(q->why, sizeof(q->why), "out of memory");
		return;
	}
	memcpy(b + q->len, data, n);
	q->body = b;
	q->len += n;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *data,
				 size_t *data_size, void **con_cls)
{
	(void)cls;
	(void)version;
	struct req *q = *con_cls;
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		*con_cls = q;
		q->method = method;
		if (!peer_allowed(c, &q->peer, q->why, sizeof(q->why))) {
			q->status = 403;
			return MHD_YES;
		}
		q->route = route_of(url, q);
		if (q->route == R_NONE) {
			q->status = 404;
			snprintf(q->why, sizeof(q->why), "no such resource: %s", url);
		} else if (!method_ok(q->route, method)) {
			q->status = 405;
			snprintf(q->why, sizeof(q->why), "%s takes %s", url, methods_of(q->route));
		} else if ((q->route == R_FILE || q->route == R_ARCHIVE) &&
			   !strcmp(method, "PUT")) {
			upload_start(c, q);
		}
		return MHD_YES;
	}
	if (*data_size) {
		body_piece(q, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	return dispatch(c, q);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode how)
{
	(void)cls;
	(void)c;
	(void)how;
	struct req *q = *con_cls;
	if (!q)
		return;
	if (q->up)
		serve_upload_finish(q->up, false, NULL, q->why, sizeof(q->why));
	if (q->sess)
		serve_session_put(q->sess);
	free(q->body);
	free(q);
	*con_cls = NULL;
}

static void log_cb(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fputs("bulkhead serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

int serve_http_start(int listen_fd)
{
	daemon_ =
		MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
					 MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
				 0, NULL, NULL, access_cb, NULL, MHD_OPTION_EXTERNAL_LOGGER, log_cb,
				 NULL, MHD_OPTION_NOTIFY_CONNECTION, serve_accept_notify(), NULL,
				 MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
				 MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_CONNS_MAX,
				 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
	if (!daemon_)
		return -1;
	return serve_accept_start(daemon_, listen_fd);
}

void serve_http_stop(void)
{
	serve_accept_stop();
	if (daemon_)
		MHD_stop_daemon(daemon_);
	daemon_ = NULL;
}
