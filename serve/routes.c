/* SPDX-License-Identifier: Apache-2.0 */
/* serve/routes.c: one handler per row of the API's table (serve/http.c), each answering
 * once. A handler asks the session table (sessions.c), an exec (exec.c), the files of a
 * work directory (files.c, archive.c), the event ring (events.c) or the approvals; what
 * fails comes back as an enum serve_err with a why, answered through the one table. */
#include "serve/files.h"
#include "serve/http_internal.h"
#include "session/approvals.h"
#include "session/pause_ask.h"
#include "lib/json_strict.h"
#include "lib/signame.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum MHD_Result route_health(struct MHD_Connection *c, struct req *q)
{
	(void)q;
	pthread_mutex_lock(&serve.lock);
	unsigned n = serve.nsessions;
	pthread_mutex_unlock(&serve.lock);
	return http_reply(c, 200,
			  json_pack("{sb ss si so}", "ok", 1, "version", "1", "sessions", (int)n,
				    "pool", serve_pool_json()));
}

enum MHD_Result route_pool(struct MHD_Connection *c, struct req *q)
{
	(void)q;
	return http_reply(c, 200, serve_pool_json());
}

enum MHD_Result route_events(struct MHD_Connection *c, struct req *q)
{
	const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
	char *end = NULL;
	long long n = since ? strtoll(since, &end, 10) : -1;
	if (since && (!*since || *end || n < 0))
		return http_reply_err(c, SERVE_E_INVALID, "since must be an event's seq");
	struct serve_body b;
	if (serve_events_body(n, http_client_fd(c), &q->peer, &b))
		return http_reply_err(c, SERVE_E_INTERNAL, "out of memory");
	return http_reply_body(c, &b, "application/x-ndjson");
}

enum MHD_Result route_list(struct MHD_Connection *c, struct req *q)
{
	return http_reply(c, 200, serve_sessions_json(&q->peer));
}

/* Answers STATUS with session S as the API shows it, and lets S go. */
static enum MHD_Result reply_session(struct MHD_Connection *c, unsigned status,
				     struct serve_session *s)
{
	pthread_mutex_lock(&serve.lock);
	json_t *o = serve_session_json(s);
	pthread_mutex_unlock(&serve.lock);
	serve_session_put(s);
	return http_reply(c, status, o);
}

enum MHD_Result route_create(struct MHD_Connection *c, struct req *q)
{
	json_t *body = http_body_json(q);
	if (!body)
		return http_reply_error(c, (unsigned)q->status, q->why);
	struct serve_create cr;
	enum serve_err err = SERVE_E_INVALID;
	struct serve_session *s = NULL;
	if (serve_create_parse(body, &cr, q->why, sizeof(q->why)) == 0)
		s = serve_create(&cr, &q->peer, &err, q->why, sizeof(q->why));
	json_decref(body);
	if (!s)
		return http_reply_err(c, err, q->why);
	return reply_session(c, 201, s);
}

enum MHD_Result route_get(struct MHD_Connection *c, struct req *q)
{
	struct serve_session *s = serve_session_get(q->id, &q->peer);
	if (!s)
		return http_reply_err(c, SERVE_E_NOT_FOUND, "no such session");
	return reply_session(c, 200, s);
}

enum MHD_Result route_delete(struct MHD_Connection *c, struct req *q)
{
	json_t *o = NULL;
	enum serve_err err = serve_delete(q->id, &q->peer, &o);
	if (err)
		return http_reply_err(c, err, "no such session");
	return http_reply(c, 200, o);
}

enum MHD_Result route_exec(struct MHD_Connection *c, struct req *q)
{
	json_t *body = http_body_json(q);
	if (!body)
		return http_reply_error(c, (unsigned)q->status, q->why);
	struct serve_session *s = serve_session_get(q->id, &q->peer);
	if (!s) {
		json_decref(body);
		return http_reply_err(c, SERVE_E_NOT_FOUND, "no such session");
	}
	pthread_mutex_lock(&serve.lock);
	const char *no = s->ended ? "the session has ended"
			 : s->paused || s->pausing
				 ? "the session is paused (POST /v1/sessions/ID/resume)"
				 : NULL;
	pthread_mutex_unlock(&serve.lock);
	if (no) {
		serve_session_put(s);
		json_decref(body);
		return http_reply_err(c, SERVE_E_CONFLICT, no);
	}
	struct serve_body b;
	enum serve_err err =
		serve_exec_body(s, body, http_client_fd(c), &b, q->why, sizeof(q->why));
	json_decref(body);
	if (err)
		return http_reply_err(c, err, q->why);
	return http_reply_body(c, &b, "application/x-ndjson");
}

/* POST /v1/sessions/{id}/pause (arg 1) or .../resume (arg 0), with an empty body (or {}):
 * the supervisor saves the guest to disk or brings it back (session/pause_ask.h); the answer
 * is the session as it is then. One at a time per session. */
enum MHD_Result route_pause(struct MHD_Connection *c, struct req *q)
{
	bool pause = q->rt->arg == 1;
	json_t *body = http_body_json(q);
	if (!body)
		return http_reply_error(c, (unsigned)q->status, q->why);
	size_t nkeys = json_object_size(body);
	json_decref(body);
	if (nkeys)
		return http_reply_err(c, SERVE_E_INVALID, "the body must be empty or {}");
	struct serve_session *s = serve_session_get(q->id, &q->peer);
	if (!s)
		return http_reply_err(c, SERVE_E_NOT_FOUND, "no such session");
	pthread_mutex_lock(&serve.lock);
	const char *no = s->ended     ? "the session has ended"
			 : s->pausing ? "a pause or resume of the session is under way"
				      : NULL;
	if (!no)
		s->pausing = true;
	pthread_mutex_unlock(&serve.lock);
	if (no) {
		serve_session_put(s);
		return http_reply_err(c, SERVE_E_CONFLICT, no);
	}
	int rc = session_pause_ask(s->id, pause, q->why, sizeof(q->why));
	pthread_mutex_lock(&serve.lock);
	s->pausing = false;
	if (rc == 0)
		s->paused = pause;
	pthread_mutex_unlock(&serve.lock);
	if (rc < 0) {
		serve_session_put(s);
		return http_reply_err(c, SERVE_E_CONFLICT, q->why);
	}
	return reply_session(c, 200, s);
}

enum MHD_Result route_get_file(struct MHD_Connection *c, struct req *q)
{
	struct serve_session *s = serve_session_get(q->id, &q->peer);
	if (!s)
		return http_reply_err(c, SERVE_E_NOT_FOUND, "no such session");
	struct serve_body b;
	bool file = q->rt->arg == ROUTE_FILE;
	enum serve_err err =
		file ? serve_file_body(s->work, q->rest, &b, q->why, sizeof(q->why))
		     : serve_archive_body(s->work, q->rest, serve.state, &b, q->why, sizeof(q->why));
	serve_session_put(s);
	if (err)
		return http_reply_err(c, err, q->why);
	return http_reply_body(c, &b, file ? "application/octet-stream" : "application/x-tar");
}

void routes_upload_start(struct MHD_Connection *c, struct req *q)
{
	q->sess = serve_session_get(q->id, &q->peer);
	if (!q->sess) {
		q->status = http_status_of(SERVE_E_NOT_FOUND);
		snprintf(q->why, sizeof(q->why), "no such session");
		return;
	}
	if (q->sess->work_ro) {
		q->status = http_status_of(SERVE_E_CONFLICT);
		snprintf(q->why, sizeof(q->why), "the session's work directory is read-only");
		return;
	}
	const char *m = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "mode");
	char *end = NULL;
	long mode = m ? strtol(m, &end, 8) : 0644;
	if (m && (!*m || *end || mode < 0 || mode > 0777)) {
		q->status = http_status_of(SERVE_E_INVALID);
		snprintf(q->why, sizeof(q->why), "mode must be octal permission bits (0644)");
		return;
	}
	enum serve_err err = SERVE_OK;
	q->up = serve_upload_start(q->sess->work, q->rest, q->rt->arg == ROUTE_ARCHIVE,
				   (mode_t)mode, serve.state, &err, q->why, sizeof(q->why));
	if (!q->up)
		q->status = (int)http_status_of(err);
}

enum MHD_Result route_put_done(struct MHD_Connection *c, struct req *q)
{
	unsigned long long n = 0;
	enum serve_err err = serve_upload_finish(q->up, true, &n, q->why, sizeof(q->why));
	q->up = NULL;
	if (err)
		return http_reply_err(c, err, q->why);
	return http_reply(c, 201,
			  q->rt->arg == ROUTE_FILE
				  ? json_pack("{sssI}", "path", q->rest, "size", (json_int_t)n)
				  : json_pack("{sI}", "entries", (json_int_t)n));
}

enum MHD_Result route_exec_stdin(struct MHD_Connection *c, struct req *q)
{
	const char *eof = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "eof");
	enum serve_err err = serve_exec_stdin(q->id, &q->peer, q->body ? q->body : "", q->len,
					      eof && strcmp(eof, "0"), q->why, sizeof(q->why));
	return err ? http_reply_err(c, err, q->why) : http_reply(c, 204, NULL);
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

/* POST .../signal {"signal"} (arg 's') or .../resize {"rows", "cols"} (arg 'w'). */
enum MHD_Result route_exec_control(struct MHD_Connection *c, struct req *q)
{
	json_t *b = http_body_json(q);
	if (!b)
		return http_reply_error(c, (unsigned)q->status, q->why);
	bool sig_route = q->rt->arg == 's';
	const char *keys_sig[] = { "signal", NULL }, *keys_win[] = { "rows", "cols", NULL };
	const char *bad = json_strict_unknown(b, sig_route ? keys_sig : keys_win);
	int sig = signal_number(json_object_get(b, "signal"));
	json_t *r = json_object_get(b, "rows"), *co = json_object_get(b, "cols");
	enum serve_err err = SERVE_E_INVALID;
	if (bad) {
		snprintf(q->why, sizeof(q->why), "unknown field \"%s\"", bad);
	} else if (sig_route && !sig) {
		snprintf(q->why, sizeof(q->why), "\"signal\": a name (TERM) or 1..64");
	} else if (!sig_route && (!json_is_integer(r) || !json_is_integer(co) ||
				  json_integer_value(r) < 1 || json_integer_value(r) > 65535 ||
				  json_integer_value(co) < 1 || json_integer_value(co) > 65535)) {
		snprintf(q->why, sizeof(q->why), "\"rows\" and \"cols\": 1..65535");
	} else {
		err = serve_exec_control(q->id, &q->peer, q->rt->arg,
					 sig ? sig : (int)json_integer_value(r),
					 (int)json_integer_value(co), q->why, sizeof(q->why));
	}
	json_decref(b);
	return err ? http_reply_err(c, err, q->why) : http_reply(c, 204, NULL);
}

/* Approvals are the operator's: a held request may carry any session's secrets' use. */
static bool approvals_allowed(const struct req *q)
{
	return serve_peer_admin(&q->peer);
}

enum MHD_Result route_approvals(struct MHD_Connection *c, struct req *q)
{
	if (!approvals_allowed(q))
		return http_reply_err(c, SERVE_E_FORBIDDEN,
				      "approvals are for root and the daemon's uid");
	return http_reply(c, 200, json_pack("{so}", "approvals", approvals_collect(NULL)));
}

/* POST /v1/approvals/{id}/approve (arg 1) or .../deny (arg 0). */
enum MHD_Result route_decide(struct MHD_Connection *c, struct req *q)
{
	if (!approvals_allowed(q))
		return http_reply_err(c, SERVE_E_FORBIDDEN,
				      "approvals are for root and the daemon's uid");
	json_t *b = http_body_json(q);
	if (!b)
		return http_reply_error(c, (unsigned)q->status, q->why);
	json_t *all = approvals_collect(NULL), *a = approvals_find(all, q->id);
	const char *keys[] = { "reason", NULL }, *bad = json_strict_unknown(b, keys);
	json_t *reason = json_object_get(b, "reason");
	enum serve_err err = SERVE_OK;
	if (bad || (reason && !json_is_string(reason))) {
		err = SERVE_E_INVALID;
		snprintf(q->why, sizeof(q->why), "the body may hold only \"reason\" (a string)");
	} else if (!a) {
		err = SERVE_E_NOT_FOUND;
		snprintf(q->why, sizeof(q->why), "no pending approval %s", q->id);
	} else if (approvals_decide(a, q->rt->arg == 1, json_string_value(reason), q->why,
				    sizeof(q->why)) < 0) {
		err = SERVE_E_CONFLICT;
	}
	json_decref(b);
	json_decref(all);
	return err ? http_reply_err(c, err, q->why) : http_reply(c, 204, NULL);
}
