/* SPDX-License-Identifier: Apache-2.0 */
/* serve/http.c: the API over libmicrohttpd — a thread per connection on our Unix socket.
 * Each request: its peer checked (SO_PEERCRED) before anything else, its route found in the
 * one table below, its body gathered (JSON: at most 1 MiB) or streamed (uploads), then its
 * handler (serve/routes.c) answers once. Every error is {"error": "..."} with the status
 * the one table of error kinds gives (docs/API.md "Errors"). */
#include "serve/files.h"
#include "serve/http_internal.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY_MAX (1 << 20)

/* The API. A path names a resource; the methods it takes are its rows (in this order in a
 * 405's answer). */
const struct route serve_routes[] = {
	{ "GET", "/v1/health", route_health, 0, 0 },
	{ "GET", "/v1/pool", route_pool, 0, 0 },
	{ "GET", "/v1/events", route_events, 0, 0 },
	{ "GET", "/v1/sessions", route_list, 0, ROUTE_SLASH },
	{ "POST", "/v1/sessions", route_create, 0, ROUTE_SLASH },
	{ "GET", "/v1/sessions/{id}", route_get, 0, 0 },
	{ "DELETE", "/v1/sessions/{id}", route_delete, 0, 0 },
	{ "POST", "/v1/sessions/{id}/exec", route_exec, 0, 0 },
	{ "POST", "/v1/sessions/{id}/pause", route_pause, 1, 0 },
	{ "POST", "/v1/sessions/{id}/resume", route_pause, 0, 0 },
	{ "GET", "/v1/sessions/{id}/files/{rest}", route_get_file, ROUTE_FILE, 0 },
	{ "PUT", "/v1/sessions/{id}/files/{rest}", route_put_done, ROUTE_FILE, ROUTE_UPLOAD },
	{ "GET", "/v1/sessions/{id}/archive/{rest}", route_get_file, ROUTE_ARCHIVE, 0 },
	{ "PUT", "/v1/sessions/{id}/archive/{rest}", route_put_done, ROUTE_ARCHIVE, ROUTE_UPLOAD },
	{ "GET", "/v1/approvals", route_approvals, 0, ROUTE_SLASH },
	{ "POST", "/v1/approvals/{id}/approve", route_decide, 1, 0 },
	{ "POST", "/v1/approvals/{id}/deny", route_decide, 0, 0 },
	{ "POST", "/v1/execs/{id}/stdin", route_exec_stdin, 0, 0 },
	{ "POST", "/v1/execs/{id}/signal", route_exec_control, 's', 0 },
	{ "POST", "/v1/execs/{id}/resize", route_exec_control, 'w', 0 },
	{ NULL, NULL, NULL, 0, 0 },
};

/* The one table of error kinds to statuses. */
static const unsigned status_of[] = {
	[SERVE_OK] = 200,	   [SERVE_E_INVALID] = 400, [SERVE_E_FORBIDDEN] = 403,
	[SERVE_E_NOT_FOUND] = 404, [SERVE_E_TIMEOUT] = 408, [SERVE_E_CONFLICT] = 409,
	[SERVE_E_TOO_LARGE] = 413, [SERVE_E_REFUSED] = 422, [SERVE_E_INTERNAL] = 500,
	[SERVE_E_BUSY] = 503,
};

static struct MHD_Daemon *daemon_;

unsigned http_status_of(enum serve_err err)
{
	return (unsigned)err < sizeof(status_of) / sizeof(status_of[0]) && status_of[err]
		       ? status_of[err]
		       : 500;
}

enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, json_t *o)
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

enum MHD_Result http_reply_error(struct MHD_Connection *c, unsigned status, const char *why)
{
	/* Reasons may quote what a client sent (a URL, a path): printable ASCII only, so the
	 * answer is always valid JSON. */
	char line[512];
	size_t n = 0;
	for (; why[n] && n < sizeof(line) - 1; n++)
		line[n] = why[n] >= 0x20 && why[n] <= 0x7e ? why[n] : '?';
	line[n] = '\0';
	return http_reply(c, status, json_pack("{ss}", "error", line));
}

/* A reader body as libmicrohttpd's callback: its own copy, freed with the response. */
static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	const struct serve_body *b = cls;
	ssize_t n = b->read(b->cls, buf, max);
	if (n == SERVE_BODY_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return n < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : n;
}

static void body_free(void *cls)
{
	struct serve_body *b = cls;
	b->release(b->cls);
	free(b);
}

enum MHD_Result http_reply_body(struct MHD_Connection *c, const struct serve_body *b,
				const char *type)
{
	struct MHD_Response *r = NULL;
	if (b->fd >= 0) {
		r = MHD_create_response_from_fd(b->size, b->fd); /* it closes fd from here */
		if (!r)
			close(b->fd);
	} else {
		struct serve_body *own = malloc(sizeof(*own));
		if (own) {
			*own = *b;
			r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, b->block, body_read,
							      own, body_free);
		}
		if (!r) {
			free(own);
			b->release(b->cls);
		}
	}
	if (!r)
		return http_reply_err(c, SERVE_E_INTERNAL, "cannot make a response");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

enum MHD_Result http_reply_err(struct MHD_Connection *c, enum serve_err err, const char *why)
{
	return http_reply_error(c, http_status_of(err), why);
}

static bool is_id(const char *s, size_t n)
{
	return n > 0 && n < 64 && strspn(s, "0123456789abcdefghijklmnopqrstuvwxyz-_") >= n;
}

/* Whether url is the row's path; its {id} and {rest} into q. */
static bool path_match(const struct route *rt, const char *url, struct req *q)
{
	const char *p = rt->path;
	while (*p) {
		if (!strncmp(p, "{id}", 4)) {
			size_t n = strcspn(url, "/");
			if (!is_id(url, n))
				return false;
			memcpy(q->id, url, n);
			q->id[n] = '\0';
			url += n, p += 4;
		} else if (!strcmp(p, "/{rest}")) {
			if (*url && *url != '/')
				return false;
			const char *rel = *url ? url + 1 : "";
			if (strlen(rel) >= sizeof(q->rest))
				return false;
			snprintf(q->rest, sizeof(q->rest), "%s", rel);
			return true;
		} else if (*p++ != *url++) {
			return false;
		}
	}
	return !*url || ((rt->flags & ROUTE_SLASH) && !strcmp(url, "/"));
}

/* The row for method and url; NULL with q->status 404, or 405 naming the methods the path
 * takes. */
static const struct route *route_find(const char *method, const char *url, struct req *q)
{
	char takes[64] = "";
	for (const struct route *rt = serve_routes; rt->method; rt++) {
		if (!path_match(rt, url, q))
			continue;
		if (!strcmp(rt->method, method))
			return rt;
		if (!strstr(takes, rt->method)) {
			size_t n = strlen(takes);
			snprintf(takes + n, sizeof(takes) - n, "%s%s", n ? "," : "", rt->method);
		}
	}
	q->status = takes[0] ? 405 : 404;
	if (takes[0])
		snprintf(q->why, sizeof(q->why), "%s takes %s", url, takes);
	else
		snprintf(q->why, sizeof(q->why), "no such resource: %s", url);
	return NULL;
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

int http_client_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* The body as a JSON object; NULL with q->status. Empty: {}. */
json_t *http_body_json(struct req *q)
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

/* A piece of the body: gathered (JSON, stdin), or fed to the upload. */
static void body_piece(struct req *q, const char *data, size_t n)
{
	if (q->status)
		return; /* failed: the rest is read and dropped */
	if (q->up) {
		enum serve_err err = serve_upload_feed(q->up, data, n, q->why, sizeof(q->why));
		if (err)
			q->status = (int)http_status_of(err);
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
		q->rt = route_find(method, url, q);
		if (q->rt && (q->rt->flags & ROUTE_UPLOAD))
			routes_upload_start(c, q);
		return MHD_YES;
	}
	if (*data_size) {
		body_piece(q, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	if (q->status)
		return http_reply_error(c, (unsigned)q->status, q->why);
	return q->rt->fn(c, q);
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
