/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_internal.h: the proxy's internals, shared by its files — one guest connection's
 * state and the helpers that work on it, each named for its file (proxy_<file>_...). Not an
 * interface: proxy.h is. proxy.c drives the connection, proxy_request.c a request's head,
 * proxy_head.c collects heads, proxy_io.c moves bytes, proxy_secret.c holds its secrets,
 * proxy_rewrite.c builds what goes upstream (credentials, placeholders), proxy_aws.c signs,
 * proxy_response.c relays and scrubs the answer. */
#ifndef BULKHEAD_BROKER_PROXY_INTERNAL_H
#define BULKHEAD_BROKER_PROXY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <http_parser.h>
#include <openssl/ssl.h>

#include <openssl/evp.h>

#include "broker/audit.h"
#include "broker/decide.h"
#include "broker/proxy.h"
#include "broker/reqcheck.h"
#include "broker/rules.h"
#include "broker/scrub.h"
#include "broker/secbuf.h"
#include "broker/stream_frame.h"

struct h2_up; /* h2_up.h: the upstream's HTTP/2, when it chose it */

/* One message head: the URL or status text and the headers, in one bounded arena. */
struct head {
	char arena[PROXY_MAX_HEAD];
	size_t used;
	size_t url_off, url_len;
	struct {
		size_t name_off, name_len, val_off, val_len;
	} h[PROXY_MAX_HEADERS];
	size_t n;
	int in_value; /* the last callback was a header value */
};

/* A secret as this connection's requests see it: read again when the source's generation
 * has changed since (a vault replaced on disk serves the next request: broker/vault_live.h);
 * a value the connection had before stays in its scrubber, so an echo of it is scrubbed. */
struct secret_slot {
	uint8_t *val;
	size_t len;
	int state;	       /* 0 not loaded (or unavailable: asked again), 1 loaded */
	int peeked;	       /* loaded with SECRET_PEEK: for the scrubber, not yet to be used */
	unsigned gen;	       /* the source's generation it was read at */
	int64_t until_ms;      /* monotonic: an obtained token is asked for again from then */
	unsigned retired_seen; /* the last of its retired values the scrubber has */
	char why[200];	       /* why it is not available (the source's words) */
};

struct conn {
	unsigned secrets_gen; /* the secret source's generation for the current request */
	const struct proxy_config *cfg;
	int fd;
	unsigned long id;
	http_parser rq, rp;
	struct head req, resp;
	/* Why the current request failed, before any response byte went out. */
	int err_status;
	char err_msg[320];
	struct proxy_cut *cut; /* the loop's, while a worker serves it (proxy.h) */
	int close_after;
	/* The current request. */
	int is_head, chunked_in, client_10, expect_continue, resp_started, resp_done;
	int has_body, in_head;
	int cl_zero; /* the request said Content-Length: 0: the upstream is told so too */
	int resp_headed;      /* the final response's head has been read (proxy_response.c) */
	size_t trailers_from; /* resp's fields from this one on are its trailers */
	const char *rp_read;  /* the upstream's bytes now being parsed ... */
	char rp_read_last;    /* ... and the last byte of the read before them */
	char method[16], host[RULES_HOST_MAX + 1], log_path[200], rule[320];
	const struct rules_dest *dest;
	uint64_t t0_ns; /* lib/mono.h */
	size_t bytes_up, bytes_down;
	char *up_head; /* kept to resend once on a reused connection the upstream had closed */
	size_t up_head_len;
	/* The upstream connection, reused while it stays on the same destination. */
	int up_fd;
	SSL *up_ssl;
	struct h2_up *up_h2; /* the upstream chose HTTP/2 (h2_up.c): up_ssl carries its frames */
	int up_offer_h2;     /* offer it HTTP/2: this request came over HTTP/2 (h2_front.c) */
	const struct rules_dest *up_dest;
	int up_reused, up_keep;
	struct secret_slot *secrets;
	struct scrub scrub;
	/* Where the response's messages end: each is scrubbed and released whole when complete
	 * (SSE, NDJSON); STREAM_FRAME_NONE: the fixed lag alone (proxy_response.c). */
	struct stream_frame frame;
	unsigned long messages; /* message ends released, for the audit record */
	int resp_long; /* a stream of messages (framed, or gRPC's): --stream-idle-timeout applies */
	uint8_t wbuf[32768]; /* toward the guest, not yet sent (proxy_io_client_write) */
	size_t wlen;
	uint8_t obuf[16384 + 64];
	size_t olen;
	unsigned long served;
	/* A CONNECT tunnel: the guest's TLS ends here, with a leaf minted for tun_host. */
	SSL *cl_ssl;
	int in_tunnel; /* requests are for tun_host: in cl_ssl, or one HTTP/2 stream (h2_front.c) */
	char tun_host[RULES_HOST_MAX + 1];
	int tun_port;
	int connect_ok; /* the current request is a CONNECT the rules allow */
	int serve_ca;	/* the current request asks for the session CA's certificate */
	/* The current request as matched (q.path points into q_path), for its body. */
	struct rules_req q;
	char q_path[PROXY_MAX_URL + 1];
	int body_mode;		 /* BODY_*: how the body travels upstream (proxy_body.c) */
	char carry[16384 + 128]; /* body bytes waiting for the rest of a placeholder */
	size_t carry_n;
	struct secbuf body_buf; /* BODY_BUFFER: the whole body, placeholders replaced */
	/* What decided the current request (decide.h), for the audit log: the broker's decision
	 * ("allow", "deny"; NULL: none was made), whatever the upstream answered. */
	const char *layer, *decision;
	/* The request target as the guest sent it: its path and query start at this offset in
	 * the URL (have_target: the URL was parsed). */
	size_t target_off;
	int have_target;
	char secret_name[DECIDE_MAX_INJECT * (RULES_NAME_MAX + 1)]; /* all, joined by "," */
	const char *inj_names[DECIDE_MAX_INJECT]; /* every secret injected (names in rules) */
	const struct rules_secret *inj[DECIDE_MAX_INJECT]; /* the same secrets */
	size_t n_inj_names;
	int port;		/* the request's port, its scheme's default when the URL has none */
	int audit_due;		/* a request began and has no audit record yet */
	int audit_reserved;	/* room for its record is set aside (audit_reserve) */
	const char *outcome;	/* AUDIT_OUTCOME_* when the guest's side ended the request */
	int head_seen;		/* the head's end was parsed: fields after it are trailers */
	int64_t head_t0_ms;	/* when the head now arriving began (head_clock set) */
	int head_clock, rcv_ms; /* rcv_ms: the guest socket's receive timeout now */
	/* In a tunnel: when the guest's TLS must have brought what it is bringing (its handshake,
	 * or the records of a request head; from their first byte), in monotonic ms; 0: no such
	 * deadline. tls_late: a read was refused for it (proxy_tunnel.c). */
	int64_t tls_deadline_ms;
	int tls_late;
	/* The strict grammar the guest's bytes pass before http_parser reads them. */
	struct reqcheck rc;
	char approval_id[APPROVAL_ID_LEN + 1];
	/* A request held for approval (proxy_hold.c): nothing goes upstream before a yes. */
	int hold, hold_needs_body;
	int req_https;	     /* the current request asked for https */
	EVP_MD_CTX *hold_md; /* SHA-256 of the request as received */
	char *hold_raw;	     /* the body's first PROXY_HOLD_RAW bytes as the guest sent them (while
			      * held: an idle connection does not carry it) */
	size_t hold_raw_n;
	size_t hold_bytes; /* taken from the hold budgets (hold_budget.h) */
	int hold_counted;  /* ... and the request itself */

	size_t buf_taken; /* taken from the buffer budgets for this request (proxy_body.c) */

	/* The secret that signs the current request (proxy_aws.c), or NULL; the payload hash it
	 * signs ("": the body's, hashed when it is whole). */
	const struct rules_secret *aws;
	char aws_payload[72];

	/* A compressed response being decoded (proxy_decode.c). */
	struct proxy_decode *dec;

	/* A WebSocket (proxy_ws.c): the request asks for one (ws, with its key), the upstream
	 * accepted it (ws_open); its record's counts. */
	int ws, ws_open;
	char ws_key[25];
	uint8_t *ws_early; /* the upstream's bytes read with its 101: its first frames */
	size_t ws_early_n;
	struct audit_ws ws_stats;
	struct ws_relay *wsr; /* its relay's state, kept while it waits without a thread */

	/* A relay waiting without a thread (proxy.h PROXY_STREAM): which one (STREAM_*), and when
	 * it must run again at the latest (monotonic ms; 0: no bound). */
	int stream;
	int64_t stream_due_ms;
	int linger_ms; /* the worker's (proxy_conn_serve): a relay silent this long parks; <0 never
			*/
	/* The answer being relayed (proxy_response.c): its upstream's last bytes, when its head
	 * must be whole (0: none begun), whether any byte came. */
	int64_t up_last_ms, rp_head_until;
	int rp_got;
	char *rest; /* the guest's bytes read after the request a parked relay answers */
	size_t rest_n;
};

enum { STREAM_NONE, STREAM_ANSWER, STREAM_WS };
/* A relay that went quiet for the worker's linger returns this: it waits without a thread. */
#define PROXY_RELAY_PARKED 1

enum {
	PH_HEADER,
	PH_URL,
	PH_BODY
}; /* where proxy_rewrite_placeholders() replaces: how values travel */
enum { BODY_NONE, BODY_STREAM, BODY_CHUNKED, BODY_BUFFER };
#define PROXY_BODY_BUFFER    65536	/* Content-Length bodies held to be re-measured */
#define PROXY_BODY_GROWN_MAX (1 << 20)	/* ... and what they may grow to with secrets */
#define PROXY_HOLD_MAX	     (64 << 20) /* a body held for approval */
#define PROXY_HOLD_RAW	     65536	/* ... of which its first bytes are read for git refs */

/* A WebSocket message (all its fragments) is relayed whole: at most this much. */
#define PROXY_WS_MESSAGE_MAX (16 << 20)

/* A compressed response is decoded and held whole: at most this much, decoded. */
#define PROXY_DECODED_MAX (8 << 20)

#define CONN(p) ((struct conn *)(p)->data)

/* proxy_error.c: the request's error, answered (by proxy.c, which serves the connection:
 * proxy.h) before any response byte went out; the first one set wins. */
void proxy_fail(struct conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* proxy_complete.c: the request has arrived whole (http_parser's on_message_complete): it is
 * answered and recorded. -1 stops the parser (an error, or the connection's end). */
int proxy_request_complete(http_parser *p);
/* A parked relay (c->stream) run on: as proxy_request_complete after it, -1 or 0, with
 * c->stream set again when it parked again. */
int proxy_complete_resume(struct conn *c);
/* A parked relay ended by the loop (a session's end, an eviction): recorded with OUTCOME. */
void proxy_complete_abandon(struct conn *c, const char *outcome);
/* proxy_request.c: the request's head, phase by phase (http_parser's on_headers_complete). */
int proxy_request_headers(http_parser *p);
/* proxy_parse.c: http_parser's callbacks for the guest's requests, and a connection's
 * state between two requests (what the next one's record and answer start from). */
extern const http_parser_settings proxy_rq_settings;
void proxy_request_reset(struct conn *c);

/* proxy_head.c: a message head collected from the parser's callbacks. */
int proxy_head_append(struct head *h, const char *at, size_t len, size_t *field_len);
void proxy_head_reset(struct head *h);
int proxy_head_field(struct head *h, const char *at, size_t len);
int proxy_head_value(struct head *h, const char *at, size_t len);
int proxy_head_done(struct head *h);
int proxy_head_is(const struct head *h, size_t i, const char *name);
const char *proxy_head_val(const struct head *h, size_t i);
/* proxy_io.c: bytes both ways, plain or TLS; the upstream connection. */
int proxy_io_client_write(struct conn *c, const void *b, size_t n);
int proxy_io_client_flush(struct conn *c);
/* The guest socket's receive timeout: MS, set only when it changes. */
void proxy_io_rcv_timeout(struct conn *c, int ms);
ssize_t proxy_io_client_read(struct conn *c, void *b, size_t n);
int proxy_io_up_open(struct conn *c);
int proxy_io_up_write(struct conn *c, const void *b, size_t n);
/* proxy_answer.c: an answer's head (c->resp) judged before it is relayed. */
int proxy_answer_head_ok(const struct head *h);
int proxy_answer_credential_host(const struct conn *c);
int proxy_answer_grpc_compressed(const struct conn *c);
int proxy_answer_partial(const struct conn *c, unsigned status);
enum stream_framing proxy_answer_framing(const struct conn *c);
int proxy_answer_grpc(const struct conn *c);

/* Bytes, 0 at the end, -1 on failure, or PROXY_IO_AGAIN: what arrived was none of the answer
 * (an HTTP/2 upstream's control frames); wait again. */
#define PROXY_IO_AGAIN (-2) /* h2_up.h's H2_UP_AGAIN, passed on as it is */
ssize_t proxy_io_up_read(struct conn *c, void *b, size_t n);
/* Flushes what waits for the guest, then waits at most MS for the upstream to have bytes, and
 * gives up at once when the guest's side hangs up (its close, a session's end, the loop taking
 * the connection). 1: readable, 0: MS passed, -1: the guest is gone. */
int proxy_io_up_wait(struct conn *c, int ms);
void proxy_io_up_close(struct conn *c);
void proxy_io_timeouts(int fd, int ms);
/* proxy_secret.c: the connection's secrets, read when needed and scrubbed. */
const struct secret_slot *proxy_secret_get(struct conn *c, const struct rules_secret *s);
/* Every secret the rules name into the scrubber, as far as it is known without asking anyone (an
 * obtained token not yet obtained cannot be echoed). */
void proxy_secret_scrub_all(struct conn *c);
void proxy_secret_wipe(struct conn *c);
/* Before bytes read from an upstream are scrubbed: when the secret source changed since this
 * connection read its values (another connection took a new vault), the new values (and those
 * retired) join the scrubber, also in the middle of an answer. */
void proxy_secret_catch_up(struct conn *c);
/* Between two requests, when the source changed: the scrubber starts again from the values
 * that are still to be scrubbed (current, and retired that have not expired), so a connection
 * kept alive for hours does not scrub every token it ever saw. */
void proxy_secret_scrub_anew(struct conn *c);
/* 503 naming secret S and, when the source said, why it is not available. */
void proxy_secret_unavailable(struct conn *c, const struct rules_secret *s);
/* The upstream answered 401: the source may drop an obtained token the request carried. */
void proxy_secret_unauthorized(struct conn *c);
/* proxy_rewrite.c: placeholders, the path check and the upstream head. */
int proxy_rewrite_placeholders(struct conn *c, const struct rules_req *q, const char *t, size_t len,
			       struct secbuf *out, int mode);
int proxy_rewrite_path_ok(const char *p, size_t len);
int proxy_rewrite_head(struct conn *c, const struct rules_req *q, const char *query, size_t qlen,
		       const struct rules_secret **inj, size_t n_inj, struct secbuf *o);
/* proxy_response.c: the upstream's answer, relayed and scrubbed: 0, -EAGAIN (a reused
 * connection the upstream had closed), -EIO, or PROXY_RELAY_PARKED (resumed by ..._resume). */
int proxy_response_relay(struct conn *c);
int proxy_response_resume(struct conn *c);
/* proxy_target.c: where a request goes, as the guest named it. */
int proxy_target(struct conn *c, const char *url, char scheme[8], int *port,
		 char path[PROXY_MAX_URL + 1], const char **query, size_t *qlen);
int proxy_target_connect(struct conn *c, const char *url, size_t len);
int proxy_target_host_ok(const char *hv, const char *host, int port);
void proxy_target_log(struct conn *c, const char *scheme, int port, const char *path);
/* proxy_tunnel.c: CONNECT, and the TLS that follows it. */
int proxy_tunnel_connect(struct conn *c);
int proxy_tunnel_start(struct conn *c, int early_bytes);
/* 1 when the guest's TLS in the tunnel chose HTTP/2 (ALPN "h2"): h2_front.c serves it. */
int proxy_tunnel_h2(const struct conn *c);
/* C serves one HTTP/2 stream's request for HOST:PORT as if it came inside a tunnel there. */
void proxy_tunnel_stream(struct conn *c, const char *host, int port);
/* The record of an HTTP/2 stream in the tunnel TUN that no thread served: refused by the
 * front with STATUS and WHY (outcome NULL), or ended by the guest first (STATUS 0, OUTCOME). */
void proxy_tunnel_stream_record(const struct conn *tun, const char *method, const char *path,
				int status, const char *why, const char *outcome);
/* h2_front.c: HTTP/2 from the guest, inside a CONNECT tunnel whose TLS chose "h2". Serves
 * the tunnel C until the guest or the broker ends it. Each stream's request becomes an
 * HTTP/1.1 request to a connection state of its own (proxy_tunnel_stream), served on a thread
 * of its own through a socket pair: decided, credentialed, scrubbed and recorded exactly as a
 * request of an HTTP/1.1 tunnel is. Its answer goes back to the guest as the stream's HEADERS,
 * DATA and trailers. Returns when every stream's thread has ended. */
void h2_front_serve(struct conn *c);
/* proxy_audit.c: one audit record and log line per request, exactly one. */
void proxy_audit_log(struct conn *c, int status);
void proxy_audit_due(struct conn *c);
void proxy_audit_release(struct conn *c);
/* proxy_decode.c: a compressed answer, decoded and held whole. */
int proxy_decode_plan(struct conn *c, int has_body);
int proxy_decode_feed(struct conn *c, const uint8_t *in, size_t n,
		      int (*sink)(struct conn *, const uint8_t *, size_t));
int proxy_decode_finish(struct conn *c);
int proxy_decode_defer(struct conn *c, const void *b, size_t n);
int proxy_decode_release(struct conn *c);
void proxy_decode_free(struct conn *c);
/* proxy_ws_handshake.c: a WebSocket's handshake — the guest's checked (at the end of
 * head_framing: 0, or -1 with the refusal recorded), the upstream's 101 (0, or -1 with 502).
 * proxy_ws.c: then its messages relayed until both sides closed (c->ws_early: the bytes read
 * with the 101); 0 at its end, or PROXY_RELAY_PARKED: quiet, resumed by calling it again. */
int proxy_ws_request(struct conn *c, const http_parser *p);
int proxy_ws_accept_ok(struct conn *c);
int proxy_ws_relay(struct conn *c);
/* Its relay state freed, with OUTCOME when none was set (a parked WebSocket the loop ends). */
void proxy_ws_free(struct conn *c, const char *outcome);
/* proxy_body.c: the request's body on its way upstream. */
void proxy_body_plan(struct conn *c, size_t n_inj);
int proxy_body_feed(struct conn *c, const char *at, size_t len, int final);
int proxy_body_finish(struct conn *c);
int proxy_body_send_held(struct conn *c);
/* N more bytes buffered whole for the current request: 0, or -1 with 503 recorded when the
 * session's or the broker's budget for buffered bodies is spent. */
int proxy_body_budget(struct conn *c, size_t n);
/* The request is over: what it took goes back. */
void proxy_body_budget_end(struct conn *c);
/* proxy_aws.c: a request signed with an AWS key. Its checks, after the decision (0, or -1
 * with the refusal recorded; sets c->aws when a secret signs it); the signature, into
 * c->up_head once it is built (and its body whole, when that is what is hashed). */
int proxy_aws_check(struct conn *c, const char *path, const char *query, size_t qlen,
		    const struct rules_secret **inj, size_t n_inj);
int proxy_aws_sign(struct conn *c);

/* proxy_hold.c: a request held whole for approval. */
int proxy_hold_begin(struct conn *c);
int proxy_hold_body(struct conn *c, const char *at, size_t len);
int proxy_hold_decide(struct conn *c);
void proxy_hold_end(struct conn *c);

#endif
