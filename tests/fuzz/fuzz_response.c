/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_response.c: libFuzzer target for the broker's response path — whatever a
 * hostile upstream answers, through the real proxy_response_relay(): http_parser, header filtering,
 * Content-Encoding decoding, the scrubber and the chunk framing toward the guest.
 *
 * Input: a flags byte (HEAD request, HTTP/1.0 guest, a credential injected, a WebSocket: the
 * upstream's bytes follow a valid 101 and are frames, relayed by proxy_ws_relay(); the relay
 * parked whenever the upstream is quiet and resumed, as the connection loop does), a seed for where the
 * upstream's writes break, then the upstream's bytes. They arrive over a SOCK_SEQPACKET pair, one
 * write per read, so the broker sees the same read boundaries every time. Each input runs twice:
 * with secret A loaded and with secret B (same length). Checks: ASan and UBSan on every path; a
 * relay that succeeded sent exactly one response the guest can parse; no covered form of a
 * run's secret in what the guest receives (raw, hex, base64 fragments at every alignment in
 * both alphabets, every byte percent- or \u-escaped or in another language's escape:
 * octal, \u{..}, %uHHHH, CSS, padded HTML references, Perl's \x{..} \o{..} \N{U+..},
 * shells' \0NNN, Java's \uuu, Python's \N{NAME}); no partial response (206,
 * Content-Range) where a credential was injected; and unless the scrubber found a
 * complete match in either run, the bytes on the wire, chunk framing included, are identical
 * with A and with B: the framing does not depend on whether the upstream's bytes begin a
 * secret. */
#include "broker/proxy_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>

#define SECRET_A "fuzz-secret-7f3a9c"
#define SECRET_B "zqxw-vkjy-8e2b1d4f"
/* The 101 a WebSocket input's frames follow: RFC 6455's sample key and its accept. */
#define WS_KEY	  "dGhlIHNhbXBsZSBub25jZQ=="
#define WS_101                                                                          \
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
	"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"

struct buf {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct buf *o, const void *p, size_t n)
{
	if (o->n + n > o->cap || !o->b) {
		o->cap = (o->n + n) * 2 + 4096;
		o->b = realloc(o->b, o->cap);
		if (!o->b)
			abort();
	}
	if (n)
		memcpy(o->b + o->n, p, n);
	o->n += n;
}

struct up {
	int fd;
	const uint8_t *data;
	size_t size;
	uint32_t seed;
};

/* The upstream: its bytes in writes of 1..300 bytes, then end of stream. */
static void *upstream(void *arg)
{
	struct up *u = arg;
	uint32_t x = u->seed | 1;
	size_t off = 0;

	while (off < u->size) {
		size_t k;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		k = 1 + x % 300;
		if (k > u->size - off)
			k = u->size - off;
		if (send(u->fd, u->data + off, k, MSG_NOSIGNAL) != (ssize_t)k)
			break;
		off += k;
	}
	shutdown(u->fd, SHUT_WR);
	return NULL;
}

struct guest {
	int fd;
	struct buf out;
};

static void *guest(void *arg)
{
	struct guest *g = arg;
	uint8_t b[65536];
	ssize_t r;

	while ((r = recv(g->fd, b, sizeof(b), 0)) > 0)
		put(&g->out, b, (size_t)r);
	return NULL;
}

/* Waits up to 5 s for A (or B, when not -1) to be readable or hung up: where the loop wakes a
 * parked relay. */
static void wait_readable(int a, int b)
{
	struct pollfd p[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };

	(void)poll(p, b < 0 ? 1 : 2, 5000);
}

/* One relay of DATA with SECRET loaded; the guest's bytes in OUT, and in *MATCHED whether the
 * scrubber found a complete match (released or still held when the relay stopped). Returns
 * what proxy_response_relay() returned. */
static int relay(const uint8_t *data, size_t size, uint8_t flags, uint32_t seed, const char *secret,
		 struct buf *out, int *matched)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct up u = { .data = data, .size = size, .seed = seed };
	int ws = (flags >> 3) & 1;
	struct buf framed = { 0 };
	struct guest g = { 0 };
	int usv[2], gsv[2], rc;
	pthread_t ut, gt;

	if (!c || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, usv) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gsv))
		abort();
	static const struct proxy_config cfg; /* no budgets: a decoded answer is bounded alone */
	c->cfg = &cfg;
	c->fd = gsv[0];
	c->up_fd = usv[0];
	c->is_head = !ws && (flags & 1);
	c->client_10 = !ws && ((flags >> 1) & 1);
	if (ws) {
		c->ws = 1;
		memcpy(c->ws_key, WS_KEY, sizeof(WS_KEY));
		put(&framed, WS_101, sizeof(WS_101) - 1);
		put(&framed, data, size);
		u.data = framed.b;
		u.size = framed.n;
	}
	c->n_inj_names = (flags >> 2) & 1; /* a credential went with the request */
	snprintf(c->host, sizeof(c->host), "fuzz.test");
	scrub_init(&c->scrub);
	if (scrub_add_secret(&c->scrub, (const uint8_t *)secret, strlen(secret)))
		abort();
	proxy_io_timeouts(c->up_fd, 5000);
	u.fd = usv[1];
	g.fd = gsv[1];
	if (pthread_create(&ut, NULL, upstream, &u) || pthread_create(&gt, NULL, guest, &g))
		abort();
	/* With flag 16 the relay parks whenever the upstream is quiet (a linger of 0) and is
	 * resumed once it has bytes, as the connection loop does: what the guest gets must not
	 * change. */
	c->linger_ms = (flags & 16) ? 0 : -1;
	rc = proxy_response_relay(c);
	while (rc == PROXY_RELAY_PARKED) {
		wait_readable(c->up_fd, -1);
		rc = proxy_response_resume(c);
	}
	if (!rc && c->ws_open)
		while (proxy_ws_relay(c) == PROXY_RELAY_PARKED)
			wait_readable(c->up_fd, c->fd);
	free(c->ws_early);
	proxy_io_client_flush(c);
	shutdown(c->fd, SHUT_WR);
	close(c->up_fd); /* an upstream still writing gets EPIPE */
	pthread_join(ut, NULL);
	pthread_join(gt, NULL);
	close(c->fd);
	close(usv[1]);
	close(gsv[1]);
	*matched = c->scrub.replaced || c->scrub.n_ranges;
	scrub_free(&c->scrub);
	free(c);
	free(framed.b);
	*out = g.out;
	return rc;
}

/* What the guest's HTTP client makes of WIRE: the body, de-chunked. (The head is checked as
 * it is on the wire: fields joined without their separators could form what the guest never
 * sees.) */
struct parse {
	struct buf *body;
	int is_head, complete;
};

static int on_body(http_parser *p, const char *at, size_t n)
{
	put(((struct parse *)p->data)->body, at, n);
	return 0;
}

static int on_headers(http_parser *p)
{
	return ((struct parse *)p->data)->is_head; /* 1: no body follows */
}

static int on_complete(http_parser *p)
{
	((struct parse *)p->data)->complete = 1;
	return 0;
}

/* Returns whether WIRE is exactly one well-framed response. */
static int body_of(const struct buf *wire, struct buf *body, int is_head)
{
	static const http_parser_settings s = { .on_headers_complete = on_headers,
						.on_body = on_body,
						.on_message_complete = on_complete };
	struct parse ps = { body, is_head, 0 };
	http_parser p;
	size_t done;

	http_parser_init(&p, HTTP_RESPONSE);
	p.data = &ps;
	put(body, "", 0);
	done = http_parser_execute(&p, &s, (const char *)wire->b, wire->n);
	if (HTTP_PARSER_ERRNO(&p) == HPE_OK && !ps.complete)
		http_parser_execute(&p, &s, NULL, 0);
	return ps.complete && done == wire->n && HTTP_PARSER_ERRNO(&p) == HPE_OK;
}

static int holds(const struct buf *b, const char *form, size_t n)
{
	return n && b->n >= n && memmem(b->b, b->n, form, n);
}

/* Aborts when any form of SECRET the scrubber covers is in B. */
static void check_forms(const struct buf *b, const char *secret)
{
	static const char *const lang[] = {
		"\\%03o",	"\\u{%x}",    "%%u%04X",   "\\%x ",	     "\\%06x",
		"&#%04d;",	"&#x%04X;",   "\\U%08x",   "&#X%08x;",	     "&#%09d;",
		"\\x{%x}",	"\\x{%010X}", "\\o{%o}",   "\\o{%011o}",     "\\N{U+%X}",
		"\\N{U+%010x}", "\\0%o",      "\\uuu%04x", "\\uuuuuuuu%04X",
	};
	static const char *const digits[] = { "ZERO", "ONE", "TWO",   "THREE", "FOUR",
					      "FIVE", "SIX", "SEVEN", "EIGHT", "NINE" };
	static const char *const digits_lc[] = { "zero", "one", "two",	 "three", "four",
						 "five", "six", "seven", "eight", "nine" };
	size_t n = strlen(secret), off, i, k;
	char form[1024], plain[64];

	if (holds(b, secret, n))
		goto found;
	for (i = 0; i < n; i++)
		sprintf(form + 2 * i, "%02x", (unsigned char)secret[i]);
	if (holds(b, form, 2 * n))
		goto found;
	for (i = 0; i < n; i++)
		sprintf(form + 2 * i, "%02X", (unsigned char)secret[i]);
	if (holds(b, form, 2 * n))
		goto found;
	for (i = 0; i < n; i++)
		sprintf(form + 3 * i, "%%%02x", (unsigned char)secret[i]);
	if (holds(b, form, 3 * n))
		goto found;
	for (i = 0; i < n; i++)
		sprintf(form + 6 * i, "\\u%04x", (unsigned char)secret[i]);
	if (holds(b, form, 6 * n))
		goto found;
	/* The other languages' escapes, every character escaped. */
	for (k = 0; k < sizeof(lang) / sizeof(lang[0]); k++) {
		size_t l = 0;

		for (i = 0; i < n; i++)
/* The formats are the fixed table above. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-nonliteral"
			l += (size_t)sprintf(form + l, lang[k], (unsigned char)secret[i]);
#pragma clang diagnostic pop
		if (holds(b, form, l))
			goto found;
	}
	/* Python's \N{NAME}, upper and lower case (the secrets hold lower-case letters, digits and
	 * '-'). */
	for (k = 0; k < 2; k++) {
		size_t l = 0;

		for (i = 0; i < n; i++) {
			char c = secret[i];

			if (c >= 'a' && c <= 'z')
				l += (size_t)sprintf(form + l,
						     k ? "\\N{latin small letter %c}"
						       : "\\N{LATIN SMALL LETTER %c}",
						     k ? c : c - 'a' + 'A');
			else if (c >= '0' && c <= '9')
				l += (size_t)sprintf(form + l, "\\N{%s%s}", k ? "digit " : "DIGIT ",
						     (k ? digits_lc : digits)[c - '0']);
			else
				l += (size_t)sprintf(form + l, "\\N{%s}",
						     k ? "hyphen-minus" : "HYPHEN-MINUS");
		}
		if (holds(b, form, l))
			goto found;
	}
	for (off = 0; off < 3; off++) {
		size_t first = off ? off + 1 : 0, end = (off + n) * 8 / 6;

		memset(plain, 'A', off);
		memcpy(plain + off, secret, n);
		EVP_EncodeBlock((unsigned char *)form, (unsigned char *)plain, (int)(off + n));
		if (holds(b, form + first, end - first))
			goto found;
		for (i = first; i < end; i++)
			form[i] = form[i] == '+' ? '-' : form[i] == '/' ? '_' : form[i];
		if (holds(b, form + first, end - first))
			goto found;
	}
	return;
found:
	fprintf(stderr, "fuzz_response: a form of %s reached the guest\n", secret);
	abort();
}

/* Whether the head W sent the guest (up to its blank line) has a header named NAME, in any
 * case. A reason phrase may say anything ("216 Partial Content-Range: ..."): only a header
 * line counts. */
static int has_header(const struct buf *w, const char *name)
{
	size_t n = strlen(name);
	const uint8_t *end = w->n ? memmem(w->b, w->n, "\r\n\r\n", 4) : NULL;

	for (const uint8_t *p = w->b; end && p && p < end;) {
		const uint8_t *line = memmem(p, (size_t)(end - p), "\r\n", 2);
		if (!line)
			break;
		line += 2;
		if ((size_t)(end - line) > n && !strncasecmp((const char *)line, name, n) &&
		    line[n] == ':')
			return 1;
		p = line;
	}
	return 0;
}

/* Undefined behaviour is a finding, not a warning in the log. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf wa = { 0 }, wb = { 0 }, ca = { 0 }, cb = { 0 };
	uint8_t flags;
	uint32_t seed;
	int ra, rb, ma, mb;

	if (size < 2)
		return 0;
	flags = data[0];
	seed = (uint32_t)data[1] * 2654435761u;
	ra = relay(data + 2, size - 2, flags, seed, SECRET_A, &wa, &ma);
	rb = relay(data + 2, size - 2, flags, seed, SECRET_B, &wb, &mb);
	/* A relay that succeeded sent exactly one response the guest can parse (a WebSocket's
	 * frames follow its head: the wire is checked whole below). */
	if (!(flags & 8) &&
	    ((!body_of(&wa, &ca, flags & 1) && !ra) || (!body_of(&wb, &cb, flags & 1) && !rb))) {
		fprintf(stderr, "fuzz_response: a relayed response is not well framed\n");
		abort();
	}
	/* Toward a host a credential went to, no partial response reaches the guest. */
	if ((flags & 4) && ((wa.n >= 12 && !memcmp(wa.b, "HTTP/1.1 206", 12)) ||
			    has_header(&wa, "content-range"))) {
		fprintf(stderr, "fuzz_response: a partial response reached the guest\n");
		abort();
	}
	check_forms(&wa, SECRET_A);
	check_forms(&ca, SECRET_A);
	check_forms(&wb, SECRET_B);
	check_forms(&cb, SECRET_B);
	/* Only a complete match may make the two runs differ. */
	if (!ma && !mb && (wa.n != wb.n || (wa.n && memcmp(wa.b, wb.b, wa.n)))) {
		fprintf(stderr,
			"fuzz_response: without a complete match, the guest's bytes differ "
			"between secret A (%zu bytes) and secret B (%zu bytes)\n",
			wa.n, wb.n);
		abort();
	}
	/* A relay that parked at every quiet read and was resumed gives the guest exactly the
	 * bytes of one that never parked: parking changes who waits, never what is sent. */
	if (flags & 16) {
		struct buf wn = { 0 };
		int mn;

		relay(data + 2, size - 2, flags & ~16, seed, SECRET_A, &wn, &mn);
		if (wn.n != wa.n || (wn.n && memcmp(wn.b, wa.b, wn.n))) {
			fprintf(stderr,
				"fuzz_response: parked and resumed, the guest got %zu bytes; "
				"never parked, %zu\n",
				wa.n, wn.n);
			abort();
		}
		free(wn.b);
	}
	free(wa.b);
	free(wb.b);
	free(ca.b);
	free(cb.b);
	return 0;
}
