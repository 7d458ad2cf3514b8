/* SPDX-License-Identifier: Apache-2.0 */
/* lib/agent_proto.c: the exec agent protocol's codecs, writer and incremental reader. */
#include "lib/agent_proto.h"

#include "lib/io.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* --- writing ------------------------------------------------------------------------- */

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void agent_hdr_encode(uint8_t out[AGENT_HDR_LEN], int type, uint32_t len)
{
	out[0] = AGENT_VERSION;
	out[1] = (uint8_t)type;
	out[2] = out[3] = 0;
	put_le32(out + 4, len);
}

int agent_send(int fd, int type, const void *payload, size_t len)
{
	if (len > AGENT_MAX_PAYLOAD || agent_check_len(type, len) < 0)
		return -EINVAL;
	uint8_t h[AGENT_HDR_LEN];
	agent_hdr_encode(h, type, (uint32_t)len);
	struct iovec iov[2] = { { h, sizeof(h) }, { (void *)(uintptr_t)payload, len } };
	return io_writev_full(fd, iov, len ? 2 : 1);
}

int agent_check_len(int type, size_t len)
{
	switch (type) {
	case AGENT_EXEC:
		return len >= sizeof(struct agent_exec) + 2 ? 0 : -EPROTO;
	case AGENT_STDIN:
	case AGENT_STDOUT:
	case AGENT_STDERR:
	case AGENT_ERROR:
		return 0;
	case AGENT_SIGNAL:
		return len == AGENT_SIGNAL_LEN ? 0 : -EPROTO;
	case AGENT_WINSIZE:
		return len == AGENT_WINSIZE_LEN ? 0 : -EPROTO;
	case AGENT_EXIT:
		return len == AGENT_EXIT_LEN ? 0 : -EPROTO;
	case AGENT_CLOCK:
		return len == AGENT_CLOCK_LEN ? 0 : -EPROTO;
	case AGENT_READY:
	case AGENT_TEMPLATE_READY:
		return len == 0 ? 0 : -EPROTO;
	case AGENT_SESSION:
		return len > AGENT_SESSION_FIXED && len <= AGENT_SESSION_FIXED + AGENT_SESSION_ARGS_MAX + 1
			       ? 0
			       : -EPROTO;
	}
	return -EPROTO;
}

/* --- a template's session --------------------------------------------------------------- */

/* Printable, of a command line's size, and no template word: a restored guest is a session. */
static bool session_args_ok(const char *a, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (a[i] < 0x20 || a[i] > 0x7e)
			return false;
	return len <= AGENT_SESSION_ARGS_MAX && !memmem(a, len, "bulkhead.template", 17);
}

void agent_clock_encode(uint8_t out[AGENT_CLOCK_LEN], int64_t sec, uint32_t nsec)
{
	put_le32(out, (uint32_t)((uint64_t)sec & 0xffffffffu));
	put_le32(out + 4, (uint32_t)((uint64_t)sec >> 32));
	put_le32(out + 8, nsec);
}

int agent_clock_decode(const uint8_t *p, size_t len, int64_t *sec, uint32_t *nsec)
{
	uint64_t s = get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
	uint32_t ns = get_le32(p + 8);
	if (len != AGENT_CLOCK_LEN || s > (uint64_t)AGENT_CLOCK_MAX || ns >= 1000000000u)
		return -EPROTO;
	*sec = (int64_t)s;
	*nsec = ns;
	return 0;
}

long agent_session_encode(void *buf, size_t buflen, const struct agent_session *s)
{
	size_t alen = strlen(s->args), len = AGENT_SESSION_FIXED + alen + 1;
	uint8_t *p = buf;
	if (!session_args_ok(s->args, alen) || len > buflen || s->sec < 0 ||
	    s->sec > AGENT_CLOCK_MAX || s->nsec >= 1000000000u)
		return -E2BIG;
	memcpy(p, s->entropy, AGENT_SESSION_ENTROPY);
	agent_clock_encode(p + AGENT_SESSION_ENTROPY, s->sec, s->nsec);
	memcpy(p + AGENT_SESSION_FIXED, s->args, alen + 1);
	return (long)len;
}

int agent_session_decode(const void *payload, size_t len, struct agent_session *s)
{
	const uint8_t *p = payload;
	if (agent_check_len(AGENT_SESSION, len) < 0 ||
	    agent_clock_decode(p + AGENT_SESSION_ENTROPY, AGENT_CLOCK_LEN, &s->sec, &s->nsec) < 0)
		return -EPROTO;
	const char *args = (const char *)p + AGENT_SESSION_FIXED;
	size_t alen = len - AGENT_SESSION_FIXED - 1;
	if (args[alen] != '\0' || !session_args_ok(args, alen))
		return -EPROTO;
	memcpy(s->entropy, p, AGENT_SESSION_ENTROPY);
	s->args = args;
	return 0;
}

/* --- fixed payloads ------------------------------------------------------------------ */

void agent_signal_encode(uint8_t out[AGENT_SIGNAL_LEN], int sig)
{
	put_le32(out, (uint32_t)sig);
}

int agent_signal_decode(const uint8_t *p, size_t len, int *sig)
{
	if (len != AGENT_SIGNAL_LEN)
		return -EPROTO;
	uint32_t v = get_le32(p), num = v & ~(uint32_t)AGENT_SIGNAL_PROCESS;
	if (num < 1 || num > AGENT_SIG_MAX)
		return -EPROTO;
	*sig = (int)v;
	return 0;
}

void agent_winsize_encode(uint8_t out[AGENT_WINSIZE_LEN], uint16_t rows, uint16_t cols)
{
	put_le16(out, rows);
	put_le16(out + 2, cols);
}

int agent_winsize_decode(const uint8_t *p, size_t len, uint16_t *rows, uint16_t *cols)
{
	if (len != AGENT_WINSIZE_LEN)
		return -EPROTO;
	*rows = get_le16(p);
	*cols = get_le16(p + 2);
	return 0;
}

void agent_exit_encode(uint8_t out[AGENT_EXIT_LEN], int code, int sig)
{
	put_le32(out, (uint32_t)(sig ? -1 : code));
	put_le32(out + 4, (uint32_t)sig);
}

int agent_exit_decode(const uint8_t *p, size_t len, struct agent_exit *e)
{
	if (len != AGENT_EXIT_LEN)
		return -EPROTO;
	int32_t code = (int32_t)get_le32(p), sig = (int32_t)get_le32(p + 4);
	if (!((code >= 0 && code <= 255 && sig == 0) ||
	      (code == -1 && sig >= 1 && sig <= AGENT_SIG_MAX)))
		return -EPROTO;
	e->code = code;
	e->signal = sig;
	return 0;
}

/* --- EXEC ---------------------------------------------------------------------------- */

long agent_exec_encode(void *buf, size_t buflen, uint32_t flags, uint16_t rows, uint16_t cols,
		       const char *cwd, char *const argv[], char *const env[])
{
	size_t pos = sizeof(struct agent_exec);
	uint32_t argc = 0, envc = 0;
	if (buflen < pos)
		return -E2BIG;
	const char *const *lists[3] = { (const char *const[]){ cwd, NULL },
					(const char *const *)argv, (const char *const *)env };
	for (int l = 0; l < 3; l++) {
		for (size_t i = 0; lists[l] && lists[l][i]; i++) {
			size_t n = strlen(lists[l][i]) + 1;
			if (n > buflen - pos)
				return -E2BIG;
			memcpy((char *)buf + pos, lists[l][i], n);
			pos += n;
			argc += l == 1;
			envc += l == 2;
		}
	}
	if (argc == 0 || argc > AGENT_MAX_ARGS || envc > AGENT_MAX_ARGS || pos > AGENT_MAX_PAYLOAD)
		return -E2BIG;
	uint8_t *h = buf;
	put_le32(h + offsetof(struct agent_exec, flags), flags);
	put_le16(h + offsetof(struct agent_exec, rows), rows);
	put_le16(h + offsetof(struct agent_exec, cols), cols);
	put_le32(h + offsetof(struct agent_exec, argc), argc);
	put_le32(h + offsetof(struct agent_exec, envc), envc);
	return (long)pos;
}

int agent_exec_decode(const void *payload, size_t len, struct agent_exec_req *req)
{
	memset(req, 0, sizeof(*req));
	const uint8_t *h = payload;
	if (len < sizeof(struct agent_exec))
		return -EPROTO;
	req->flags = get_le32(h + offsetof(struct agent_exec, flags));
	req->rows = get_le16(h + offsetof(struct agent_exec, rows));
	req->cols = get_le16(h + offsetof(struct agent_exec, cols));
	req->argc = get_le32(h + offsetof(struct agent_exec, argc));
	req->envc = get_le32(h + offsetof(struct agent_exec, envc));
	if (req->argc == 0 || req->argc > AGENT_MAX_ARGS || req->envc > AGENT_MAX_ARGS ||
	    (req->flags & ~(AGENT_EXEC_TTY | AGENT_EXEC_STDIN)))
		return -EPROTO;
	req->argv = calloc(req->argc + 1, sizeof(char *));
	req->env = calloc(req->envc + 1, sizeof(char *));
	if (!req->argv || !req->env)
		goto bad;
	const char *p = (const char *)payload + sizeof(struct agent_exec);
	const char *end = (const char *)payload + len;
	size_t want = 1 + req->argc + req->envc;
	for (size_t i = 0; i < want; i++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			goto bad;
		if (i == 0)
			req->cwd = p;
		else if (i <= req->argc)
			req->argv[i - 1] = p;
		else
			req->env[i - 1 - req->argc] = p;
		p = nul + 1;
	}
	if (p != end || req->cwd[0] != '/' || req->argv[0][0] == '\0')
		goto bad;
	for (uint32_t i = 0; i < req->envc; i++)
		if (!strchr(req->env[i], '=') || req->env[i][0] == '=')
			goto bad;
	return 0;
bad:
	agent_exec_free(req);
	return -EPROTO;
}

void agent_exec_free(struct agent_exec_req *req)
{
	free(req->argv);
	free(req->env);
	req->argv = NULL;
	req->env = NULL;
}

/* --- reading ------------------------------------------------------------------------- */

void agent_parser_init(struct agent_parser *p, size_t max)
{
	p->max = max < AGENT_MAX_PAYLOAD ? max : AGENT_MAX_PAYLOAD;
	p->hdr_got = 0;
	p->type = 0;
	p->len = p->got = 0;
	p->error = 0;
}

bool agent_parser_idle(const struct agent_parser *p)
{
	return p->hdr_got == 0 && !p->error;
}

/* The header is whole: check it before a single payload byte is taken. */
static int parse_hdr(struct agent_parser *p)
{
	uint32_t n = get_le32(p->hdr + 4);
	if (p->hdr[0] != AGENT_VERSION || p->hdr[2] || p->hdr[3] || n > AGENT_MAX_PAYLOAD ||
	    agent_check_len(p->hdr[1], n) < 0)
		return -EPROTO;
	if (n > p->max)
		return -EMSGSIZE;
	p->type = p->hdr[1];
	p->len = n;
	p->got = 0;
	return 0;
}

int agent_parse(struct agent_parser *p, const uint8_t *buf, size_t n, size_t *used)
{
	size_t i = 0;
	*used = 0;
	if (p->error)
		return p->error;
	while (i < n || (p->hdr_got == AGENT_HDR_LEN && p->got == p->len)) {
		if (p->hdr_got < AGENT_HDR_LEN) {
			size_t k = AGENT_HDR_LEN - p->hdr_got;
			if (k > n - i)
				k = n - i;
			memcpy(p->hdr + p->hdr_got, buf + i, k);
			p->hdr_got += k;
			i += k;
			if (p->hdr_got < AGENT_HDR_LEN)
				break;
			int rc = parse_hdr(p);
			if (rc < 0) {
				*used = i;
				return p->error = rc;
			}
			continue;
		}
		if (p->got < p->len) {
			size_t k = p->len - p->got;
			if (k > n - i)
				k = n - i;
			memcpy(p->payload + p->got, buf + i, k);
			p->got += (uint32_t)k;
			i += k;
		}
		if (p->got == p->len) {
			p->hdr_got = 0; /* the next byte starts a new frame */
			*used = i;
			return p->type;
		}
	}
	*used = i;
	return 0;
}

void agent_reader_init(struct agent_reader *r, size_t max)
{
	agent_parser_init(&r->p, max);
	r->off = r->len = 0;
	r->eof = false;
}

bool agent_reader_buffered(const struct agent_reader *r)
{
	return r->off < r->len;
}

long agent_reader_fill(struct agent_reader *r, int fd)
{
	if (r->off < r->len || r->eof)
		return -EAGAIN;
	r->off = r->len = 0;
	ssize_t n;
	do
		n = read(fd, r->in, sizeof(r->in));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (n == 0)
		r->eof = true;
	r->len = (size_t)n;
	return n;
}

int agent_reader_next(struct agent_reader *r)
{
	size_t used;
	int rc = agent_parse(&r->p, r->in + r->off, r->len - r->off, &used);
	r->off += used;
	if (rc != 0)
		return rc;
	if (!r->eof)
		return -EAGAIN;
	return agent_parser_idle(&r->p) ? 0 : -EIO;
}
