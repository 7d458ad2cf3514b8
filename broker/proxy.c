/* broker/proxy.c: serves one guest connection. The guest's request is parsed by http_parser,
 * decided against the rules at the end of its head, rewritten (credentials injected, guest
 * credentials and hop-by-hop headers dropped) and streamed to the upstream; the response is
 * streamed back re-framed as chunked, with every secret form scrubbed out of head and body. */
#include "broker/proxy.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <http_parser.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

#include "broker/dest.h"
#include "broker/mitm_ca.h"
#include "broker/scrub.h"
#include "broker/upstream_tls.h"
#include "lib/agent_proto.h"

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

struct secret_slot {
	uint8_t *val;
	size_t len;
	int state; /* 0 not loaded, 1 loaded, -1 unavailable */
};

struct conn {
	const struct proxy_config *cfg;
	int fd;
	unsigned long id;
	http_parser rq, rp;
	struct head req, resp;
	/* Why the current request failed, before any response byte went out. */
	int err_status;
	char err_msg[320];
	int close_after;
	/* The current request. */
	int is_head, chunked_in, client_10, expect_continue, resp_started, resp_done;
	int has_body, in_head;
	char method[16], host[RULES_HOST_MAX + 1], log_path[200], rule[RULES_HOST_MAX + 16];
	const struct rules_dest *dest;
	struct timespec t0;
	size_t bytes_up, bytes_down;
	char *up_head; /* kept to resend once on a reused connection the upstream had closed */
	size_t up_head_len;
	/* The upstream connection, reused while it stays on the same destination. */
	int up_fd;
	SSL *up_ssl;
	const struct rules_dest *up_dest;
	int up_reused, up_keep;
	struct secret_slot *secrets;
	struct scrub scrub;
	uint8_t obuf[16384 + 64];
	size_t olen;
	unsigned long served;
	/* A CONNECT tunnel: the guest's TLS ends here, with a leaf minted for tun_host. */
	SSL *cl_ssl;
	char tun_host[RULES_HOST_MAX + 1];
	int tun_port;
	int connect_ok; /* the current request is a CONNECT the rules allow */
	int serve_ca;	/* the current request asks for the session CA's certificate */
};

static int hdr_is(const struct head *h, size_t i, const char *name)
{
	return h->h[i].name_len == strlen(name) &&
	       !strncasecmp(h->arena + h->h[i].name_off, name, h->h[i].name_len);
}

static const char *hdr_val(const struct head *h, size_t i)
{
	return h->arena + h->h[i].val_off;
}

static void set_err(struct conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(struct conn *c, int status, const char *fmt, ...)
{
	va_list ap;

	if (c->err_status)
		return;
	c->err_status = status;
	va_start(ap, fmt);
	vsnprintf(c->err_msg, sizeof(c->err_msg), fmt, ap);
	va_end(ap);
}

static int client_write(struct conn *c, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t w = c->cl_ssl ? SSL_write(c->cl_ssl, p, (int)(n > 1 << 30 ? 1 << 30 : n))
				      : send(c->fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && !c->cl_ssl && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
		c->bytes_down += (size_t)w;
	}
	return 0;
}

static int up_write(struct conn *c, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t w = c->up_ssl ? SSL_write(c->up_ssl, p, (int)(n > 1 << 30 ? 1 << 30 : n))
				      : send(c->up_fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && !c->up_ssl && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
		c->bytes_up += (size_t)w;
	}
	return 0;
}

static ssize_t client_read(struct conn *c, void *b, size_t n)
{
	if (c->cl_ssl) {
		int r = SSL_read(c->cl_ssl, b, (int)n);

		if (r > 0)
			return r;
		return SSL_get_error(c->cl_ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
	}
	for (;;) {
		ssize_t r = recv(c->fd, b, n, 0);

		if (r >= 0 || errno != EINTR)
			return r;
	}
}

static ssize_t up_read(struct conn *c, void *b, size_t n)
{
	if (c->up_ssl) {
		int r = SSL_read(c->up_ssl, b, (int)n);

		if (r > 0)
			return r;
		return SSL_get_error(c->up_ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
	}
	for (;;) {
		ssize_t r = recv(c->up_fd, b, n, 0);

		if (r >= 0 || errno != EINTR)
			return r;
	}
}

static void up_close(struct conn *c)
{
	tlsup_close(c->up_ssl);
	if (c->up_fd >= 0)
		close(c->up_fd);
	c->up_ssl = NULL;
	c->up_fd = -1;
	c->up_dest = NULL;
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* --- head accumulation (shared by request and response parsers) ------------------------ */

static int head_append(struct head *h, const char *at, size_t len, size_t *field_len)
{
	/* One byte stays free after every piece for the terminating NUL. */
	if (len >= sizeof(h->arena) - h->used)
		return -1;
	memcpy(h->arena + h->used, at, len);
	h->used += len;
	*field_len += len;
	h->arena[h->used] = 0;
	return 0;
}

static void head_reset(struct head *h)
{
	h->arena[0] = 0;
	h->used = h->url_off = h->url_len = h->n = 0;
	h->in_value = 0;
}

static int on_hfield(struct head *h, const char *at, size_t len)
{
	if (h->in_value || !h->n) {
		if (h->n == PROXY_MAX_HEADERS)
			return -2;
		if (h->n)
			h->used++; /* keep the previous value's NUL */
		h->h[h->n].name_off = h->used;
		h->h[h->n].name_len = h->h[h->n].val_len = 0;
		h->h[h->n].val_off = 0;
		h->n++;
		h->in_value = 0;
	}
	return head_append(h, at, len, &h->h[h->n - 1].name_len);
}

static int on_hvalue(struct head *h, const char *at, size_t len)
{
	if (!h->n)
		return -1;
	if (!h->in_value) {
		h->used++; /* the name's NUL */
		if (h->used >= sizeof(h->arena))
			return -1;
		h->h[h->n - 1].val_off = h->used;
		h->arena[h->used] = 0;
		h->in_value = 1;
	}
	return head_append(h, at, len, &h->h[h->n - 1].val_len);
}

static int head_done(struct head *h)
{
	if (h->n && !h->in_value) { /* a name without value: give it an empty one */
		if (h->used + 1 >= sizeof(h->arena))
			return -1;
		h->used++;
		h->h[h->n - 1].val_off = h->used;
		h->arena[h->used] = 0;
	}
	return 0;
}

#define CONN(p) ((struct conn *)(p)->data)

static int rq_url(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (c->req.url_len + len > PROXY_MAX_URL ||
	    head_append(&c->req, at, len, &c->req.url_len)) {
		set_err(c, 400, "request URL longer than %d bytes", PROXY_MAX_URL);
		return -1;
	}
	return 0;
}

static int rq_field(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (!c->req.n && !c->req.in_value && c->req.url_len) {
		c->req.used++; /* keep the URL's NUL */
	}
	switch (on_hfield(&c->req, at, len)) {
	case 0:
		return 0;
	case -2:
		set_err(c, 400, "more than %d request headers", PROXY_MAX_HEADERS);
		return -1;
	default:
		set_err(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
}

static int rq_value(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (on_hvalue(&c->req, at, len)) {
		set_err(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
	return 0;
}

static int rq_begin(http_parser *p)
{
	struct conn *c = CONN(p);

	head_reset(&c->req);
	c->is_head = c->chunked_in = c->client_10 = c->expect_continue = 0;
	c->resp_started = c->resp_done = c->has_body = 0;
	c->connect_ok = c->serve_ca = 0;
	c->dest = NULL;
	c->bytes_up = c->bytes_down = 0;
	c->method[0] = c->host[0] = c->rule[0] = 0;
	snprintf(c->log_path, sizeof(c->log_path), "-");
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	return 0;
}

/* --- secrets ---------------------------------------------------------------------------- */

static const struct secret_slot *secret_get(struct conn *c, const struct rules_secret *s)
{
	struct secret_slot *sl = &c->secrets[s - c->cfg->rules->secrets];

	if (!sl->state) {
		sl->state = -1;
		if (c->cfg->secrets &&
		    !c->cfg->secrets->get(c->cfg->secrets->arg, s->name, &sl->val, &sl->len)) {
			sl->state = 1;
			/* Every secret is scrubbed from every response, whichever host sent it. */
			if (scrub_add_secret(&c->scrub, sl->val, sl->len))
				sl->state = -1;
		}
	}
	return sl->state == 1 ? sl : NULL;
}

static void secrets_wipe(struct conn *c)
{
	size_t i;

	for (i = 0; c->secrets && i < c->cfg->rules->n_secrets; i++)
		if (c->secrets[i].val) {
			OPENSSL_cleanse(c->secrets[i].val, c->secrets[i].len);
			free(c->secrets[i].val);
		}
	free(c->secrets);
	c->secrets = NULL;
}

/* --- request decision and rewriting ---------------------------------------------------------- */

/* A growing byte string that may hold secrets: old buffers are wiped when it grows. */
struct sb {
	char *b;
	size_t n, cap;
	int oom;
};

static void sb_add(struct sb *s, const void *p, size_t n)
{
	if (s->oom)
		return;
	if (s->n + n + 1 > s->cap) {
		size_t cap = (s->n + n + 1) * 2;
		char *b = malloc(cap);

		if (!b) {
			s->oom = 1;
			return;
		}
		if (s->b) {
			memcpy(b, s->b, s->n);
			OPENSSL_cleanse(s->b, s->cap);
			free(s->b);
		}
		s->b = b;
		s->cap = cap;
	}
	memcpy(s->b + s->n, p, n);
	s->n += n;
	s->b[s->n] = 0;
}

static void sb_str(struct sb *s, const char *str)
{
	sb_add(s, str, strlen(str));
}

static void sb_wipe(struct sb *s)
{
	if (s->b)
		OPENSSL_cleanse(s->b, s->cap);
	free(s->b);
	memset(s, 0, sizeof(*s));
}

static size_t name_run(const char *t, size_t len)
{
	size_t i = 0;

	while (i < len && (isalnum((unsigned char)t[i]) || t[i] == '_'))
		i++;
	return i;
}

/* Copies TEXT into OUT (when OUT is not NULL) with every placeholder replaced by its secret
 * (percent-encoded when URL is set). A placeholder for a secret whose destinations do not
 * include this request blocks the whole request: that is the tripwire. */
static int placeholders(struct conn *c, const struct rules_req *q, const char *t, size_t len,
			struct sb *out, int url)
{
	while (len) {
		const char *at = memmem(t, len, RULES_PLACEHOLDER, RULES_PLACEHOLDER_N);
		const struct rules_secret *s;
		const struct secret_slot *sl;
		size_t nl, i;

		if (!at) {
			if (out)
				sb_add(out, t, len);
			return 0;
		}
		if (out)
			sb_add(out, t, (size_t)(at - t));
		len -= (size_t)(at - t) + RULES_PLACEHOLDER_N;
		t = at + RULES_PLACEHOLDER_N;
		nl = name_run(t, len);
		s = rules_find_secret(c->cfg->rules, t, nl);
		if (!s || !rules_secret_match(s, q)) {
			set_err(c, 403,
				"tripwire: placeholder %s%.*s may only be sent to its own "
				"destinations; request to %s blocked",
				RULES_PLACEHOLDER, (int)(nl > 64 ? 64 : nl), t, q->host);
			snprintf(c->rule, sizeof(c->rule), "tripwire:%.*s",
				 (int)(nl > 64 ? 64 : nl), t);
			return -1;
		}
		if (out) {
			sl = secret_get(c, s);
			if (!sl) {
				set_err(c, 503, "secret %s is not available", s->name);
				return -1;
			}
			if (url) {
				char *e = rules_pct_encode(sl->val, sl->len);

				if (!e)
					return -1;
				sb_str(out, e);
				OPENSSL_cleanse(e, strlen(e));
				free(e);
			} else {
				for (i = 0; i < sl->len; i++)
					if (sl->val[i] == '\r' || sl->val[i] == '\n' ||
					    !sl->val[i]) {
						set_err(c, 502,
							"secret %s cannot travel in a header",
							s->name);
						return -1;
					}
				sb_add(out, sl->val, sl->len);
			}
		}
		t += nl;
		len -= nl;
	}
	return 0;
}

/* A path whose meaning could change after the prefix check (dot segments, encoded slashes or
 * dots, backslashes) is refused rather than normalised. */
static int path_ok(const char *p, size_t len)
{
	size_t i, seg = 0;

	for (i = 0; i <= len; i++) {
		if (i == len || p[i] == '/') {
			size_t sl = i - seg;

			if ((sl == 1 && p[seg] == '.') ||
			    (sl == 2 && p[seg] == '.' && p[seg + 1] == '.'))
				return 0;
			seg = i + 1;
			continue;
		}
		if (p[i] == '\\')
			return 0;
		if (p[i] == '%' && i + 2 < len &&
		    (!strncasecmp(p + i, "%2e", 3) || !strncasecmp(p + i, "%2f", 3) ||
		     !strncasecmp(p + i, "%5c", 3)))
			return 0;
	}
	return p[0] == '/';
}

static int upstream_open(struct conn *c)
{
	char why[300];

	c->up_fd = dest_connect(c->dest, c->cfg->connect_timeout_ms, why, sizeof(why));
	if (c->up_fd < 0) {
		set_err(c, c->up_fd == DEST_REFUSED ? 403 : 502, "%s", why);
		c->up_fd = -1;
		return -1;
	}
	set_timeouts(c->up_fd, c->cfg->io_timeout_ms);
	if (c->dest->scheme == RULES_HTTPS) {
		c->up_ssl = tlsup_connect(c->cfg->tls, c->up_fd, c->dest->host, why, sizeof(why));
		if (!c->up_ssl) {
			set_err(c, 502, "%s", why);
			up_close(c);
			return -1;
		}
	}
	c->up_dest = c->dest;
	c->up_reused = 0;
	return 0;
}

static int is_injected_field(const struct conn *c, const struct rules_secret **inj, size_t n_inj,
			     size_t i)
{
	size_t k;

	for (k = 0; k < n_inj; k++)
		if (inj[k]->kind != RULES_INJECT_QUERY && hdr_is(&c->req, i, inj[k]->field))
			return 1;
	return n_inj && (hdr_is(&c->req, i, "authorization") || hdr_is(&c->req, i, "cookie"));
}

/* Builds the request for the upstream: origin-form target with placeholders replaced and the
 * query credential injected, filtered headers, injected headers, the body's framing. */
static int build_head(struct conn *c, const struct rules_req *q, const char *query, size_t qlen,
		      const struct rules_secret **inj, size_t n_inj, struct sb *o)
{
	static const char *const drop[] = { "host",
					    "proxy-authorization",
					    "proxy-connection",
					    "connection",
					    "keep-alive",
					    "te",
					    "trailer",
					    "upgrade",
					    "transfer-encoding",
					    "content-length",
					    "expect",
					    NULL };
	char line[400];
	size_t i, j, k;
	int first = 1;

	sb_str(o, c->method);
	sb_str(o, " ");
	if (placeholders(c, q, q->path, strlen(q->path), o, 1))
		return -1;
	/* Query: the guest's parameters minus any named like an injected one, then ours. */
	for (i = 0; i < qlen;) {
		const char *end = memchr(query + i, '&', qlen - i);
		size_t pl = end ? (size_t)(end - (query + i)) : qlen - i, kl;
		int dropped = 0;

		kl = pl;
		for (j = 0; j < pl; j++)
			if (query[i + j] == '=') {
				kl = j;
				break;
			}
		for (k = 0; k < n_inj; k++)
			if (inj[k]->kind == RULES_INJECT_QUERY && strlen(inj[k]->field) == kl &&
			    !memcmp(inj[k]->field, query + i, kl))
				dropped = 1;
		if (pl && !dropped) {
			sb_str(o, first ? "?" : "&");
			first = 0;
			if (placeholders(c, q, query + i, pl, o, 1))
				return -1;
		}
		i += pl + 1;
	}
	for (k = 0; k < n_inj; k++) {
		const struct secret_slot *sl;
		char *r;

		if (inj[k]->kind != RULES_INJECT_QUERY)
			continue;
		sl = secret_get(c, inj[k]);
		if (!sl) {
			set_err(c, 503, "secret %s is not available", inj[k]->name);
			return -1;
		}
		r = rules_render(inj[k], sl->val, sl->len);
		if (!r)
			return -1;
		sb_str(o, first ? "?" : "&");
		first = 0;
		sb_str(o, inj[k]->field);
		sb_str(o, "=");
		sb_str(o, r);
		OPENSSL_cleanse(r, strlen(r));
		free(r);
	}
	if (c->dest->port != rules_default_port(c->dest->scheme))
		snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: %s:%u\r\n", c->dest->host,
			 c->dest->port);
	else
		snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: %s\r\n", c->dest->host);
	sb_str(o, line);
	for (i = 0; i < c->req.n; i++) {
		for (j = 0; drop[j] && !hdr_is(&c->req, i, drop[j]); j++)
			;
		if (drop[j] || is_injected_field(c, inj, n_inj, i))
			continue;
		sb_add(o, c->req.arena + c->req.h[i].name_off, c->req.h[i].name_len);
		sb_str(o, ": ");
		if (placeholders(c, q, hdr_val(&c->req, i), c->req.h[i].val_len, o, 0))
			return -1;
		sb_str(o, "\r\n");
	}
	for (k = 0; k < n_inj; k++) {
		const struct secret_slot *sl;
		char *r;

		if (inj[k]->kind == RULES_INJECT_QUERY)
			continue;
		sl = secret_get(c, inj[k]);
		if (!sl) {
			set_err(c, 503, "secret %s is not available", inj[k]->name);
			return -1;
		}
		r = rules_render(inj[k], sl->val, sl->len);
		if (!r) {
			set_err(c, 502, "secret %s cannot travel in a header", inj[k]->name);
			return -1;
		}
		if (inj[k]->kind == RULES_INJECT_BASIC &&
		    scrub_add(&c->scrub, (const uint8_t *)r + 6, strlen(r) - 6)) {
			free(r);
			return -1;
		}
		sb_str(o, inj[k]->field);
		sb_str(o, ": ");
		sb_str(o, r);
		sb_str(o, "\r\n");
		OPENSSL_cleanse(r, strlen(r));
		free(r);
	}
	if (c->chunked_in)
		sb_str(o, "Transfer-Encoding: chunked\r\n");
	else if (c->has_body) {
		snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
			 (unsigned long long)c->rq.content_length);
		sb_str(o, line);
	}
	sb_str(o, "\r\n");
	return o->oom ? -1 : 0;
}

static void log_target(struct conn *c, const char *scheme, int port, const char *path)
{
	size_t i;

	/* A longer target is cut in the log and the audit record, never in the request. */
	if (snprintf(c->log_path, sizeof(c->log_path), "%s://%s%s%.0d%s", scheme, c->host,
		     port >= 0 ? ":" : "", port >= 0 ? port : 0, path) >= (int)sizeof(c->log_path))
		strcpy(c->log_path + sizeof(c->log_path) - 4, "...");
	for (i = 0; c->log_path[i]; i++)
		if (!isprint((unsigned char)c->log_path[i]) || c->log_path[i] == ' ')
			c->log_path[i] = '?';
}


/* Where the request goes: scheme, host (into c->host), port (-1: the scheme's default),
 * path and query. Absolute form to the proxy, origin form inside a tunnel. Returns 0, 1 for
 * the CA route, or -1 with the error set. */
static int request_target(struct conn *c, const char *url, char scheme[8], int *port,
			  char path[PROXY_MAX_URL + 1], const char **query, size_t *qlen)
{
	struct http_parser_url u;
	size_t i;

	http_parser_url_init(&u);
	if (http_parser_parse_url(url, c->req.url_len, 0, &u)) {
		set_err(c, 400, "malformed request target");
		return -1;
	}
	if (u.field_set & (1 << UF_USERINFO)) {
		set_err(c, 400, "credentials in the URL are not accepted");
		return -1;
	}
	if (u.field_set & (1 << UF_PATH)) {
		memcpy(path, url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
		path[u.field_data[UF_PATH].len] = 0;
	} else {
		strcpy(path, "/");
	}
	if (u.field_set & (1 << UF_QUERY)) {
		*query = url + u.field_data[UF_QUERY].off;
		*qlen = u.field_data[UF_QUERY].len;
	}
	if (c->cl_ssl) {
		if (u.field_set & ((1 << UF_SCHEMA) | (1 << UF_HOST))) {
			set_err(c, 400, "requests in a tunnel use origin form (/path)");
			return -1;
		}
		strcpy(scheme, "https");
		snprintf(c->host, sizeof(c->host), "%s", c->tun_host);
		*port = c->tun_port == 443 ? -1 : c->tun_port;
		return 0;
	}
	if (!(u.field_set & (1 << UF_SCHEMA)) && !(u.field_set & (1 << UF_HOST)) &&
	    !strcmp(path, BROKER_CA_PATH) && !*qlen && !c->has_body &&
	    (!strcmp(c->method, "GET") || c->is_head)) {
		snprintf(c->log_path, sizeof(c->log_path), "%s", BROKER_CA_PATH);
		snprintf(c->rule, sizeof(c->rule), "session-ca");
		c->serve_ca = 1;
		return 1;
	}
	if (!(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST))) {
		set_err(c, 400, "the proxy needs an absolute URL (http://host/path)");
		return -1;
	}
	if (u.field_data[UF_SCHEMA].len > 5 || u.field_data[UF_HOST].len > RULES_HOST_MAX ||
	    !u.field_data[UF_HOST].len) {
		set_err(c, 400, "bad scheme or host in the URL");
		return -1;
	}
	for (i = 0; i < u.field_data[UF_SCHEMA].len; i++)
		scheme[i] = (char)tolower((unsigned char)url[u.field_data[UF_SCHEMA].off + i]);
	scheme[i] = 0;
	if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		set_err(c, 400, "only http:// and https:// URLs are proxied");
		return -1;
	}
	for (i = 0; i < u.field_data[UF_HOST].len; i++)
		c->host[i] = (char)tolower((unsigned char)url[u.field_data[UF_HOST].off + i]);
	c->host[i] = 0;
	*port = -1;
	if (u.field_set & (1 << UF_PORT)) {
		*port = u.port;
		if (!*port) {
			set_err(c, 400, "port 0 in the URL");
			return -1;
		}
	}
	return 0;
}

/* 1 when the Host header value HV names HOST and PORT (the port may be left out). */
static int host_matches(const char *hv, const char *host, int port)
{
	const char *name = hv, *end, *colon;
	char *stop = NULL;
	long hp = -1;

	if (*hv == '[') { /* an IPv6 literal */
		name = hv + 1;
		end = strchr(name, ']');
		colon = end && end[1] == ':' ? end + 1 : NULL;
		if (!end || (end[1] && !colon))
			return 0;
	} else {
		colon = strrchr(hv, ':');
		end = colon ? colon : hv + strlen(hv);
	}
	if (colon) {
		hp = strtol(colon + 1, &stop, 10);
		if (!isdigit((unsigned char)colon[1]) || *stop || hp < 1 || hp > 65535)
			return 0;
	}
	return (size_t)(end - name) == strlen(host) && !strncasecmp(name, host, strlen(host)) &&
	       (hp < 0 || hp == port);
}

/* CONNECT host:port — allowed when an https rule names that host and port; the request
 * lines inside the tunnel are then decided one by one like any other. */
static int connect_request(struct conn *c)
{
	const char *url = c->req.arena + c->req.url_off;
	struct http_parser_url u;
	size_t i;

	snprintf(c->rule, sizeof(c->rule), "connect");
	http_parser_url_init(&u);
	if (c->cl_ssl) {
		set_err(c, 400, "CONNECT inside a tunnel");
		return -1;
	}
	if (http_parser_parse_url(url, c->req.url_len, 1, &u) ||
	    u.field_data[UF_HOST].len > RULES_HOST_MAX || !u.field_data[UF_HOST].len || !u.port) {
		set_err(c, 400, "CONNECT needs host:port");
		return -1;
	}
	for (i = 0; i < u.field_data[UF_HOST].len; i++)
		c->host[i] = (char)tolower((unsigned char)url[u.field_data[UF_HOST].off + i]);
	c->host[i] = 0;
	c->tun_port = u.port;
	log_target(c, "https", u.port, "");
	if (!c->cfg->mitm) {
		set_err(c, 501, "CONNECT is not available: this broker has no session CA");
		return -1;
	}
	if (!rules_https_host(c->cfg->rules, c->host, u.port)) {
		set_err(c, 403, "denied: no https rule for %s:%u", c->host, u.port);
		return -1;
	}
	snprintf(c->tun_host, sizeof(c->tun_host), "%s", c->host);
	snprintf(c->rule, sizeof(c->rule), "connect:%s", c->host);
	c->connect_ok = 1;
	return 0;
}

static int rq_headers(http_parser *p)
{
	struct conn *c = CONN(p);
	const struct rules_secret *inj[16];
	struct rules_req q;
	struct sb o = { 0 };
	char path[PROXY_MAX_URL + 1], scheme[8];
	const char *url = c->req.arena + c->req.url_off, *query = "";
	size_t i, n_inj = 0, n_te = 0, n_cl = 0, qlen = 0, host_hdr = SIZE_MAX;
	int port = -1, https_url, reused;

	if (head_done(&c->req)) {
		set_err(c, 400, "request head larger than %d bytes", PROXY_MAX_HEAD);
		return -1;
	}
	snprintf(c->method, sizeof(c->method), "%s", http_method_str(p->method));
	c->client_10 = p->http_major == 1 && p->http_minor == 0;
	c->is_head = p->method == HTTP_HEAD;
	if (p->method == HTTP_CONNECT)
		return connect_request(c);
	for (i = 0; i < c->req.n; i++) {
		if (hdr_is(&c->req, i, "transfer-encoding")) {
			n_te++;
			if (strcasecmp(hdr_val(&c->req, i), "chunked")) {
				set_err(c, 400, "only Transfer-Encoding: chunked is accepted");
				return -1;
			}
		} else if (hdr_is(&c->req, i, "content-length")) {
			n_cl++;
		} else if (hdr_is(&c->req, i, "expect")) {
			if (strcasecmp(hdr_val(&c->req, i), "100-continue")) {
				set_err(c, 400, "unsupported Expect header");
				return -1;
			}
			c->expect_continue = 1;
		} else if (hdr_is(&c->req, i, "upgrade")) {
			set_err(c, 501, "protocol upgrades are not supported");
			return -1;
		} else if (hdr_is(&c->req, i, "host")) {
			if (host_hdr != SIZE_MAX) {
				set_err(c, 400, "more than one Host header");
				return -1;
			}
			host_hdr = i;
		}
	}
	/* Two framings for one body is how requests are smuggled: refuse, never pick one. */
	if ((n_te && n_cl) || n_te > 1 || n_cl > 1) {
		set_err(c, 400,
			"conflicting body lengths (Content-Length and Transfer-Encoding, "
			"or either twice)");
		return -1;
	}
	c->chunked_in = n_te == 1;
	c->has_body = c->chunked_in || (n_cl && p->content_length > 0);

	switch (request_target(c, url, scheme, &port, path, &query, &qlen)) {
	case 1:
		return 0; /* the session CA's certificate, answered at the end of the request */
	case 0:
		break;
	default:
		return -1;
	}
	https_url = !strcmp(scheme, "https");
	if (host_hdr == SIZE_MAX && c->cl_ssl) {
		set_err(c, 400, "a request in a tunnel needs a Host header");
		return -1;
	}
	if (host_hdr != SIZE_MAX && !host_matches(hdr_val(&c->req, host_hdr), c->host,
						  port >= 0 ? port : https_url ? 443 : 80)) {
		/* Host must name the target's authority: a mismatch is a confused or lying
		 * client (in a tunnel: the CONNECT's host, which the TLS name also matched). */
		set_err(c, 400, "the Host header does not match the %s",
			c->cl_ssl ? "CONNECT host" : "URL");
		return -1;
	}
	q.method = c->method;
	q.host = c->host;
	q.port = port;
	q.path = path;
	log_target(c, scheme, port, path);
	if (!path_ok(path, strlen(path))) {
		set_err(c, 400, "dot segments, encoded slashes or backslashes in the path");
		return -1;
	}
	for (i = 0; i < c->cfg->rules->n_secrets && n_inj < 16; i++) {
		const struct rules_dest *d = rules_secret_match(&c->cfg->rules->secrets[i], &q);

		if (!d)
			continue;
		if (!c->dest)
			c->dest = d;
		/* All credentials for one request go over the same kind of connection. */
		if (d->scheme == c->dest->scheme)
			inj[n_inj++] = &c->cfg->rules->secrets[i];
	}
	if (!c->dest)
		c->dest = rules_allow_match(c->cfg->rules, &q);
	if (n_inj)
		snprintf(c->rule, sizeof(c->rule), "secret:%s", inj[0]->name);
	else if (c->dest)
		snprintf(c->rule, sizeof(c->rule), "allow:%s", c->dest->host);
	if (!c->dest) {
		set_err(c, 403, "denied: no rule allows %s %s", c->method, c->log_path);
		return -1;
	}
	if (https_url && c->dest->scheme != RULES_HTTPS) {
		set_err(c, 403, "denied: the rule for %s is plain http, the URL asks for https",
			c->host);
		return -1;
	}
	/* Every secret the rules name is scrubbed from every response, whichever host sent it
	 * (a host may echo what another request carried), so all are loaded, once. */
	for (i = 0; i < c->cfg->rules->n_secrets; i++)
		secret_get(c, &c->cfg->rules->secrets[i]);
	/* Tripwire first, over everything the guest sent (also headers we drop). */
	if (placeholders(c, &q, url, c->req.url_len, NULL, 1))
		return -1;
	for (i = 0; i < c->req.n; i++)
		if (placeholders(c, &q, hdr_val(&c->req, i), c->req.h[i].val_len, NULL, 0))
			return -1;
	if (build_head(c, &q, query, qlen, inj, n_inj, &o)) {
		sb_wipe(&o);
		set_err(c, 502, "cannot build the upstream request");
		return -1;
	}
	if (c->up_head) {
		OPENSSL_cleanse(c->up_head, c->up_head_len);
		free(c->up_head);
	}
	c->up_head = o.b;
	c->up_head_len = o.n;
	reused = c->up_fd >= 0 && c->up_dest == c->dest;
	if (!reused) {
		up_close(c);
		if (upstream_open(c))
			return -1;
	}
	c->up_reused = reused;
	if (up_write(c, c->up_head, c->up_head_len)) {
		up_close(c);
		if (!reused || upstream_open(c) || up_write(c, c->up_head, c->up_head_len)) {
			set_err(c, 502, "cannot send the request to %s", c->host);
			return -1;
		}
	}
	if (c->expect_continue && !c->client_10 &&
	    client_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25))
		return -1;
	return 0;
}

/* --- response --------------------------------------------------------------------------- */

static int obuf_put(void *arg, const uint8_t *b, size_t n)
{
	struct conn *c = arg;

	while (n) {
		size_t room = 16384 - c->olen, k = n < room ? n : room;

		memcpy(c->obuf + c->olen, b, k);
		c->olen += k;
		b += k;
		n -= k;
		if (c->olen == 16384) {
			char sz[16];
			/* The head is not a chunk; only body bytes are framed. */
			int l = c->client_10 || c->in_head
					? 0
					: snprintf(sz, sizeof(sz), "%zx\r\n", c->olen);

			if ((l && client_write(c, sz, (size_t)l)) ||
			    client_write(c, c->obuf, c->olen) || (l && client_write(c, "\r\n", 2)))
				return -EIO;
			c->olen = 0;
		}
	}
	return 0;
}

static int obuf_chunk(struct conn *c)
{
	char sz[16];
	int l;

	if (!c->olen)
		return 0;
	l = c->client_10 ? 0 : snprintf(sz, sizeof(sz), "%zx\r\n", c->olen);
	if ((l && client_write(c, sz, (size_t)l)) || client_write(c, c->obuf, c->olen) ||
	    (l && client_write(c, "\r\n", 2)))
		return -EIO;
	c->olen = 0;
	return 0;
}

static int rp_status(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	return c->resp.url_len + len > 256 ? -1 : head_append(&c->resp, at, len, &c->resp.url_len);
}

static int rp_field(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (!c->resp.n && !c->resp.in_value)
		c->resp.used++; /* keep the status text's NUL */
	return on_hfield(&c->resp, at, len) ? -1 : 0;
}

static int rp_value(http_parser *p, const char *at, size_t len)
{
	return on_hvalue(&CONN(p)->resp, at, len);
}

static int rp_begin(http_parser *p)
{
	head_reset(&CONN(p)->resp);
	return 0;
}

static int resp_no_body(const struct conn *c, unsigned status)
{
	return c->is_head || status < 200 || status == 204 || status == 304;
}

static int rp_headers(http_parser *p)
{
	static const char *const drop[] = {
		"connection",	  "keep-alive",	      "transfer-encoding",
		"content-length", "proxy-connection", "proxy-authenticate",
		"trailer",	  "upgrade",	      NULL
	};
	struct conn *c = CONN(p);
	char line[320];
	size_t i, j;
	int l;

	if (head_done(&c->resp))
		return -1;
	if (p->status_code < 200) /* interim responses are not forwarded */
		return 0;
	c->resp_started = 1;
	c->in_head = 1;
	scrub_reset(&c->scrub);
	c->olen = 0;
	l = snprintf(line, sizeof(line), "HTTP/1.1 %u ", p->status_code);
	if (obuf_put(c, (const uint8_t *)line, (size_t)l) ||
	    scrub_feed(&c->scrub, (const uint8_t *)c->resp.arena, c->resp.url_len, obuf_put, c) ||
	    scrub_flush(&c->scrub, obuf_put, c) || obuf_put(c, (const uint8_t *)"\r\n", 2))
		return -1;
	for (i = 0; i < c->resp.n; i++) {
		for (j = 0; drop[j] && !hdr_is(&c->resp, i, drop[j]); j++)
			;
		if (drop[j])
			continue;
		if (scrub_feed(&c->scrub, (const uint8_t *)c->resp.arena + c->resp.h[i].name_off,
			       c->resp.h[i].name_len, obuf_put, c) ||
		    scrub_feed(&c->scrub, (const uint8_t *)": ", 2, obuf_put, c) ||
		    scrub_feed(&c->scrub, (const uint8_t *)hdr_val(&c->resp, i),
			       c->resp.h[i].val_len, obuf_put, c) ||
		    scrub_flush(&c->scrub, obuf_put, c) || obuf_put(c, (const uint8_t *)"\r\n", 2))
			return -1;
	}
	if (c->client_10)
		c->close_after = 1;
	l = snprintf(line, sizeof(line), "%s%s\r\n",
		     resp_no_body(c, p->status_code) || c->client_10
			     ? ""
			     : "Transfer-Encoding: chunked\r\n",
		     c->close_after ? "Connection: close\r\n" : "");
	if (obuf_put(c, (const uint8_t *)line, (size_t)l))
		return -1;
	/* The head goes out raw (it is not a chunk). */
	if (client_write(c, c->obuf, c->olen))
		return -1;
	c->olen = 0;
	c->in_head = 0;
	return c->is_head ? 1 : 0;
}

static int rp_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);

	if (!c->resp_started)
		return -1;
	if (scrub_feed(&c->scrub, (const uint8_t *)at, len, obuf_put, c) || obuf_chunk(c))
		return -1;
	return 0;
}

static int rp_complete(http_parser *p)
{
	struct conn *c = CONN(p);

	if (!c->resp_started) /* an interim 1xx: the real response follows */
		return 0;
	if (scrub_flush(&c->scrub, obuf_put, c) || obuf_chunk(c))
		return -1;
	if (!resp_no_body(c, p->status_code) && !c->client_10 && client_write(c, "0\r\n\r\n", 5))
		return -1;
	c->resp_done = 1;
	c->up_keep = http_should_keep_alive(p);
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings rp_settings = {
	.on_message_begin = rp_begin,
	.on_status = rp_status,
	.on_header_field = rp_field,
	.on_header_value = rp_value,
	.on_headers_complete = rp_headers,
	.on_body = rp_body,
	.on_message_complete = rp_complete,
};

/* Relays one response. Returns 0, -EAGAIN when a reused upstream connection closed before
 * answering (the caller may resend), or -EIO. */
static int relay_response(struct conn *c)
{
	char buf[16384];
	int got = 0;

	http_parser_init(&c->rp, HTTP_RESPONSE);
	c->rp.data = c;
	c->up_keep = 0;
	while (!c->resp_done) {
		ssize_t n = up_read(c, buf, sizeof(buf));
		size_t done;

		if (n < 0 || (n == 0 && !got)) {
			if (!got && c->up_reused)
				return -EAGAIN;
			if (!c->resp_started)
				set_err(c, 502, "upstream %s closed or failed before answering",
					c->host);
			return -EIO;
		}
		got = 1;
		done = http_parser_execute(&c->rp, &rp_settings, buf, (size_t)n);
		if (c->resp_done) {
			if (done != (size_t)n)
				c->up_keep =
					0; /* bytes beyond the response: do not trust it again */
			break;
		}
		if (HTTP_PARSER_ERRNO(&c->rp) != HPE_OK || n == 0) {
			if (!c->resp_started)
				set_err(c, 502, "upstream %s sent a malformed response (%s)",
					c->host, http_errno_description(HTTP_PARSER_ERRNO(&c->rp)));
			return -EIO;
		}
	}
	return 0;
}

/* --- request ------------------------------------------------------------------------------ */

/* The path part of log_path ("scheme://host[:port]/path"): host and port have
 * their own fields in the audit record. */
static const char *target_path(const struct conn *c)
{
	const char *auth = strstr(c->log_path, "://");
	const char *path = auth ? strchr(auth + 3, '/') : NULL;
	return path ? path : c->log_path;
}

/* One audit record per request: who, where, which rule and secret *name*, what was
 * decided; never a value (the broker never hands the audit log one). */
static void audit_request(struct conn *c, int status, uint64_t duration_us)
{
	const struct proxy_config *cfg = c->cfg;
	if (!cfg->audit)
		return;
	const char *secret = NULL, *decision = "allow";
	if (strncmp(c->rule, "secret:", 7) == 0)
		secret = c->rule + 7;
	if (strncmp(c->rule, "tripwire:", 9) == 0)
		decision = "tripwire";
	else if (status == 403)
		decision = "deny";
	else if (status >= 400 || status == 0)
		decision = "error";
	struct audit_record r = {
		.session = cfg->session,
		.method = c->method[0] ? c->method : "-",
		.host = c->host[0] ? c->host : "-",
		.port = c->dest ? c->dest->port : c->tun_port,
		.path = target_path(c),
		.rule = c->rule[0] ? c->rule : NULL,
		.secret = secret,
		.decision = decision,
		.status = status,
		.bytes_out = c->bytes_up,
		.bytes_in = c->bytes_down,
		.duration_us = duration_us,
	};
	pthread_mutex_lock(cfg->audit_lock);
	int rc = audit_append(cfg->audit, &r);
	pthread_mutex_unlock(cfg->audit_lock);
	if (rc < 0)
		fprintf(stderr, "bulkhead-broker: audit log write failed: %s\n", strerror(-rc));
}

static void log_line(struct conn *c, int status)
{
	struct timespec t1;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - c->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - c->t0.tv_nsec) / 1e6;
	audit_request(c, status, (uint64_t)(ms * 1000));
	if (!c->cfg->log)
		return;
	fprintf(stderr,
		"bulkhead-broker: conn=%lu %s %s -> %d rule=%s up=%zu down=%zu scrubbed=%zu "
		"ms=%.2f%s%s\n",
		c->id, c->method[0] ? c->method : "-", c->log_path, status,
		c->rule[0] ? c->rule : "-", c->bytes_up, c->bytes_down, c->scrub.replaced, ms,
		c->err_status ? " why=" : "", c->err_status ? c->err_msg : "");
}

static int rq_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = CONN(p);
	char sz[24];
	int l;

	if (c->err_status || c->up_fd < 0)
		return -1;
	if (c->chunked_in) {
		l = snprintf(sz, sizeof(sz), "%zx\r\n", len);
		if (up_write(c, sz, (size_t)l) || up_write(c, at, len) || up_write(c, "\r\n", 2))
			goto fail;
		return 0;
	}
	if (up_write(c, at, len))
		goto fail;
	return 0;
fail:
	set_err(c, 502, "upstream %s stopped reading the request body", c->host);
	return -1;
}

/* The session CA's certificate (public): how bulkhead-init learns what to trust. */
static int serve_ca(struct conn *c)
{
	const char *pem = mitm_ca_pem(c->cfg->mitm);
	char head[200];
	int l = snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/x-pem-file\r\n"
			 "Content-Length: %zu\r\n\r\n",
			 strlen(pem));

	if (client_write(c, head, (size_t)l) || (!c->is_head && client_write(c, pem, strlen(pem))))
		return -1;
	log_line(c, 200);
	c->served++;
	return 0;
}

static int rq_complete(http_parser *p)
{
	struct conn *c = CONN(p);
	int rc;

	if (c->connect_ok)
		return 0; /* the tunnel starts once the parser has stopped (proxy_serve) */
	if (c->serve_ca) {
		if (!c->cfg->mitm) {
			set_err(c, 404, "this broker has no session CA");
			return -1;
		}
		if (!http_should_keep_alive(p))
			c->close_after = 1; /* stops the parser; not an error */
		return serve_ca(c) || c->close_after ? -1 : 0;
	}
	if (c->err_status || c->up_fd < 0)
		return -1;
	if (c->chunked_in && up_write(c, "0\r\n\r\n", 5)) {
		set_err(c, 502, "upstream %s stopped reading the request body", c->host);
		return -1;
	}
	if (!http_should_keep_alive(p))
		c->close_after = 1;
	rc = relay_response(c);
	if (rc == -EAGAIN && !c->has_body) {
		/* The upstream closed the idle connection we reused; one fresh attempt. */
		up_close(c);
		if (upstream_open(c) || up_write(c, c->up_head, c->up_head_len))
			return -1;
		rc = relay_response(c);
	}
	if (rc) {
		if (rc == -EAGAIN && !c->resp_started)
			set_err(c, 502, "upstream %s closed the connection", c->host);
		up_close(c);
		if (!c->resp_started)
			return -1;
		c->close_after = 1;
		log_line(c, c->rp.status_code);
		return -1;
	}
	if (!c->up_keep)
		up_close(c);
	log_line(c, (int)c->rp.status_code);
	c->served++;
	return c->close_after ? -1 : 0;
}

static const http_parser_settings rq_settings = {
	.on_message_begin = rq_begin,
	.on_url = rq_url,
	.on_header_field = rq_field,
	.on_header_value = rq_value,
	.on_headers_complete = rq_headers,
	.on_body = rq_body,
	.on_message_complete = rq_complete,
};

static void send_error(struct conn *c)
{
	static const struct {
		int code;
		const char *text;
	} texts[] = { { 400, "Bad Request" },
		      { 403, "Forbidden" },
		      { 404, "Not Found" },
		      { 501, "Not Implemented" },
		      { 502, "Bad Gateway" },
		      { 503, "Service Unavailable" } };
	const char *text = "Error";
	char buf[640];
	size_t i;
	int l;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (texts[i].code == c->err_status)
			text = texts[i].text;
	l = snprintf(buf, sizeof(buf),
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\nbulkhead: %s\n",
		     c->err_status, text, strlen(c->err_msg) + 11, c->err_msg);
	client_write(c, buf, (size_t)l < sizeof(buf) ? (size_t)l : sizeof(buf) - 1);
}

/* After "200 Connection established" the guest's TLS handshake ends here, with a leaf for the
 * CONNECT host; the name the guest asked for (SNI) must be that host. */
static int tunnel_start(struct conn *c, int early_bytes)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	unsigned char ip[16];
	char why[300];
	const char *sni;
	SSL_CTX *ctx;
	int is_ip = inet_pton(AF_INET, c->tun_host, ip) == 1 ||
		    inet_pton(AF_INET6, c->tun_host, ip) == 1;

	c->connect_ok = 0;
	if (early_bytes) {
		set_err(c, 400, "bytes sent before the CONNECT was answered");
		return -1;
	}
	ctx = mitm_leaf_ctx(c->cfg->mitm, c->tun_host, why, sizeof(why));
	if (!ctx) {
		set_err(c, 502, "%s", why);
		return -1;
	}
	c->cl_ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	if (!c->cl_ssl || SSL_set_fd(c->cl_ssl, c->fd) != 1) {
		set_err(c, 502, "cannot set up TLS toward the guest");
		return -1;
	}
	/* The 200 goes out in clear: the guest's TLS starts after it. */
	{
		SSL *tls = c->cl_ssl;

		c->cl_ssl = NULL;
		if (client_write(c, ok, sizeof(ok) - 1)) {
			SSL_free(tls);
			return -1;
		}
		c->cl_ssl = tls;
	}
	c->resp_started = 1; /* from here on an error cannot be an HTTP answer to the CONNECT */
	ERR_clear_error();
	if (SSL_accept(c->cl_ssl) != 1) {
		snprintf(c->err_msg, sizeof(c->err_msg), "TLS handshake with the guest failed: %s",
			 ERR_reason_error_string(ERR_peek_last_error())
				 ? ERR_reason_error_string(ERR_peek_last_error())
				 : "connection closed");
		c->err_status = 502;
		ERR_clear_error();
		SSL_free(c->cl_ssl);
		c->cl_ssl = NULL;
		log_line(c, 502);
		return -1;
	}
	c->resp_started = 0;
	sni = SSL_get_servername(c->cl_ssl, TLSEXT_NAMETYPE_host_name);
	if (is_ip ? sni != NULL : !sni || strcasecmp(sni, c->tun_host)) {
		set_err(c, 400, "the TLS server name (%.64s) does not match the CONNECT host %s",
			sni ? sni : "none", c->tun_host);
		snprintf(c->rule, sizeof(c->rule), "sni-mismatch");
		return -1;
	}
	log_line(c, 200);
	return 0;
}

unsigned long proxy_serve(const struct proxy_config *cfg, int fd, unsigned long conn_id)
{
	struct conn *c = calloc(1, sizeof(*c));
	char buf[16384];
	unsigned long served = 0;

	if (!c) {
		close(fd);
		return 0;
	}
	c->cfg = cfg;
	c->fd = fd;
	c->id = conn_id;
	c->up_fd = -1;
	scrub_init(&c->scrub);
	c->secrets = calloc(cfg->rules->n_secrets + 1, sizeof(*c->secrets));
	if (!c->secrets)
		goto out;
	set_timeouts(fd, cfg->io_timeout_ms);
	clock_gettime(CLOCK_MONOTONIC, &c->t0); /* for a connection that fails before a request */
	http_parser_init(&c->rq, HTTP_REQUEST);
	c->rq.data = c;
	for (;;) {
		ssize_t n = client_read(c, buf, sizeof(buf));
		size_t done;

		if (n < 0)
			break;
		done = http_parser_execute(&c->rq, &rq_settings, buf, (size_t)n);
		if (c->connect_ok && !c->err_status && HTTP_PARSER_ERRNO(&c->rq) == HPE_OK) {
			if (tunnel_start(c, done != (size_t)n)) {
				if (c->err_status && !c->resp_started) {
					send_error(c);
					log_line(c, c->err_status);
				}
				break;
			}
			http_parser_init(&c->rq, HTTP_REQUEST);
			c->rq.data = c;
			continue;
		}
		if (c->err_status || HTTP_PARSER_ERRNO(&c->rq) != HPE_OK || done != (size_t)n) {
			if (!c->err_status && !c->close_after)
				set_err(c, 400, "malformed HTTP request: %s",
					http_errno_description(HTTP_PARSER_ERRNO(&c->rq)));
			if (c->err_status && !c->resp_started) {
				send_error(c);
				log_line(c, c->err_status);
			}
			break;
		}
		if (n == 0)
			break;
	}
out:
	served = c->served;
	up_close(c);
	tlsup_close(c->cl_ssl);
	free(c->up_head);
	secrets_wipe(c);
	scrub_free(&c->scrub);
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
	close(fd);
	return served;
}
