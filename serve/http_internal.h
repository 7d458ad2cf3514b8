/* SPDX-License-Identifier: Apache-2.0 */
/* serve/http_internal.h: between the HTTP glue (http.c: libmicrohttpd, peers, bodies, the
 * route table) and the handlers (routes.c: one function per route, each answering once).
 * Only these two files see libmicrohttpd's request types; the session table and everything
 * below it answer with an enum serve_err, which http.c alone turns into a status. */
#ifndef BULKHEAD_SERVE_HTTP_INTERNAL_H
#define BULKHEAD_SERVE_HTTP_INTERNAL_H

#include "serve/serve.h"

#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>

struct req;
typedef enum MHD_Result (*route_fn)(struct MHD_Connection *c, struct req *q);

/* One row of the API (docs/API.md): a method and a path of literal segments, "{id}" (one
 * id: [0-9a-z-_], 1..63) and a last "{rest}" (the rest of the path, maybe empty: a file's
 * path, an archive's directory). */
struct route {
	const char *method;
	const char *path;
	route_fn fn;
	int arg;	/* the handler's own: file or archive, approve or deny, signal or resize */
	unsigned flags; /* ROUTE_* */
};
#define ROUTE_UPLOAD 1u /* the body is streamed into an upload, not gathered */
#define ROUTE_SLASH  2u /* a trailing "/" names the same collection */

/* The table, in http.c; every handler, in routes.c. */
extern const struct route serve_routes[];

struct req {
	const struct route *rt; /* NULL until found */
	const char *method;
	char id[64];
	char rest[PATH_MAX]; /* {rest} */
	char *body;
	size_t len;
	int status; /* != 0: failed already; answered at the end */
	char why[512];
	struct serve_peer peer;
	struct serve_upload *up;
	struct serve_session *sess; /* held for an upload */
};

/* Answers: a JSON body (o is taken; NULL: none), {"error": why}. */
enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, json_t *o);
enum MHD_Result http_reply_error(struct MHD_Connection *c, unsigned status, const char *why);
enum MHD_Result http_reply_err(struct MHD_Connection *c, enum serve_err err, const char *why);
/* The body as a JSON object ({} when empty); NULL with q->status and q->why. */
json_t *http_body_json(struct req *q);
/* The connection's socket (to notice a client that went away), or -1. */
int http_client_fd(struct MHD_Connection *c);
/* The status an error kind is answered with (the one table). */
unsigned http_status_of(enum serve_err err);

/* An answer streamed from a body (serve/body.h); a body that cannot be sent is released. */
enum MHD_Result http_reply_body(struct MHD_Connection *c, const struct serve_body *b,
				const char *type);

/* accept.c: our accept loop, which hands each connection within its uid's share to the
 * server (over it: 503 and closed). */
int serve_accept_start(struct MHD_Daemon *d, int listen_fd);
void serve_accept_stop(void);
/* The connection notifier the server must be started with (it keeps the counts). */
MHD_NotifyConnectionCallback serve_accept_notify(void);

/* The first call of a ROUTE_UPLOAD request: its upload starts, or q->status says why not. */
void routes_upload_start(struct MHD_Connection *c, struct req *q);

enum MHD_Result route_health(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_pool(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_events(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_list(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_create(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_get(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_delete(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_exec(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_pause(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_get_file(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_put_done(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_exec_stdin(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_exec_control(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_approvals(struct MHD_Connection *c, struct req *q);
enum MHD_Result route_decide(struct MHD_Connection *c, struct req *q);

#define ROUTE_FILE    0 /* arg of the files and archive routes */
#define ROUTE_ARCHIVE 1

#endif
