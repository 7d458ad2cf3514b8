/* SPDX-License-Identifier: Apache-2.0 */
/* broker/audit.c: appends hash-chained JSON lines to the audit log and verifies a log's
 * chain (format and durability rules in audit.h). */
#include "broker/audit.h"
#include "lib/io.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sys/statvfs.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

struct audit {
	int fd;
	off_t size; /* end of the last complete line: where a failed append is cut back to */
	char prev[AUDIT_HASH_HEX + 1];
	unsigned sync_every, unsynced;
	_Atomic int broken; /* the last append failed (audit_reserve) */
	/* Requests forwarded whose records are not written yet, each counted at the longest
	 * line, and the most the log may grow to (0: no quota). */
	_Atomic unsigned long pending;
	_Atomic unsigned long long quota;
	_Atomic off_t size_now; /* a->size, for readers on other threads */
};

void audit_hash_line(const char *line, size_t len, char hex[AUDIT_HASH_HEX + 1])
{
	unsigned char md[32];
	size_t n = 0;
	/* SHA-256 of a buffer cannot fail short of memory corruption; an all-zero hash would
	 * then simply never match, so verification fails closed. */
	if (EVP_Digest(line, len, md, NULL, EVP_sha256(), NULL) != 1)
		memset(md, 0, sizeof(md));
	OPENSSL_buf2hexstr_ex(hex, AUDIT_HASH_HEX + 1, &n, md, sizeof(md), '\0');
	/* Lower case, as sha256sum prints it, so a log can be checked by hand. */
	for (size_t i = 0; i < AUDIT_HASH_HEX; i++)
		hex[i] = (char)tolower((unsigned char)hex[i]);
	hex[AUDIT_HASH_HEX] = '\0';
}

static void seterr(char *err, size_t errlen, const char *what, const char *path, int e,
		   const char *todo)
{
	if (err && errlen)
		snprintf(err, errlen, "audit log %s: %s%s%s%s%s", path, what, e ? ": " : "",
			 e ? strerror(e) : "", todo ? "; " : "", todo ? todo : "");
}

/* Finds the last line of the log so the chain can continue from it. */
static int read_last_hash(int fd, off_t size, char prev[AUDIT_HASH_HEX + 1], const char *path,
			  char *err, size_t errlen)
{
	if (size == 0) {
		audit_hash_line(AUDIT_GENESIS, strlen(AUDIT_GENESIS), prev);
		return 0;
	}
	size_t want = size > AUDIT_LINE_MAX + 1 ? AUDIT_LINE_MAX + 1 : (size_t)size;
	char *buf = malloc(want);
	if (!buf)
		return -ENOMEM;
	ssize_t got = io_pread_full(fd, buf, want, size - (off_t)want);
	if (got < 0 || (size_t)got < want) {
		int e = got < 0 ? (int)-got : EIO;
		seterr(err, errlen, "cannot read its last line", path, e, NULL);
		free(buf);
		return -e;
	}
	if (buf[want - 1] != '\n') {
		seterr(err, errlen, "ends with an incomplete line", path, 0,
		       "check it with 'bulkhead audit verify', keep a copy, and start a new log");
		free(buf);
		return -EBADMSG;
	}
	size_t start = want - 1;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	if (start == 0 && want < (size_t)size) {
		seterr(err, errlen, "last line is longer than any line bulkhead writes", path, 0,
		       "check it with 'bulkhead audit verify'");
		free(buf);
		return -EBADMSG;
	}
	audit_hash_line(buf + start, want - 1 - start, prev);
	free(buf);
	return 0;
}

int audit_open(const char *path, struct audit **out, char *err, size_t errlen)
{
	int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		int e = errno;
		seterr(err, errlen, "cannot open", path, e,
		       "check the directory exists and is ours");
		return -e;
	}
	int rc;
	struct stat st;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = -errno;
		seterr(err, errlen, "cannot lock", path, -rc,
		       rc == -EWOULDBLOCK ? "another broker is writing it" : NULL);
		goto fail;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		seterr(err, errlen, "is not a regular file", path, 0, NULL);
		goto fail;
	}
	struct audit *a = calloc(1, sizeof(*a));
	if (!a) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = read_last_hash(fd, st.st_size, a->prev, path, err, errlen);
	if (rc < 0) {
		free(a);
		goto fail;
	}
	a->fd = fd;
	a->size = st.st_size;
	a->sync_every = 1;
	*out = a;
	return 0;
fail:
	close(fd);
	return rc;
}

/* A JSON string for a field the guest may control: kept as is when it is UTF-8 without
 * control characters, else every byte outside printable ASCII (and '%') as %XX. */
static json_t *field(const char *s)
{
	if (!s)
		return json_null();
	size_t n = strnlen(s, AUDIT_FIELD_MAX + 1);
	if (n > AUDIT_FIELD_MAX) {
		n = AUDIT_FIELD_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--; /* do not cut a UTF-8 sequence in two */
	}
	bool plain = true;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			plain = false;
	json_t *j = plain ? json_stringn(s, n) : NULL;
	if (j)
		return j;
	char *enc = malloc(3 * n + 1), *p = enc;
	if (!enc)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '%')
			*p++ = (char)c;
		else
			p += sprintf(p, "%%%02X", c);
	}
	j = json_stringn(enc, (size_t)(p - enc));
	free(enc);
	return j;
}

/* The injected secrets' names, as a list. */
static json_t *names(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, field(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *iso_time(uint64_t ms)
{
	if (ms == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	}
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	char buf[40];
	if (!gmtime_r(&sec, &tm))
		return NULL;
	size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03uZ", (unsigned)(ms % 1000));
	return json_string(buf);
}

static json_t *ws_object(const struct audit_ws *w)
{
	return json_pack("{s:I,s:I,s:o,s:s}", "messages_out", (json_int_t)w->messages_out,
			 "messages_in", (json_int_t)w->messages_in, "close_code",
			 w->close_code ? json_integer(w->close_code) : json_null(), "closed_by",
			 w->closed_by ? w->closed_by : "broker");
}

/* Builds the line's JSON; NULL when out of memory. Insertion order is the key order. */
static json_t *creds_array(const struct audit_record *r)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < r->n_creds; i++) {
		const struct audit_cred *c = &r->creds[i];
		json_t *o = json_pack("{s:s, s:s}", "name", c->name, "kind", c->kind);

		if (o && c->token_id)
			json_object_set_new(o, "token_id", json_string(c->token_id));
		if (o && c->token_id)
			json_object_set_new(o, "expires_at",
					    c->expires_at ? json_integer(c->expires_at)
							  : json_null());
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static char *render(const struct audit_record *r, const char *prev)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	struct {
		const char *key;
		json_t *val;
	} kv[] = {
		{ "v", json_integer(AUDIT_VERSION) },
		{ "time", iso_time(r->time_ms) },
		{ "session", field(r->session) },
		{ "method", field(r->method) },
		{ "host", field(r->host) },
		{ "port", r->port ? json_integer(r->port) : json_null() },
		{ "path", field(r->path) },
		{ "target_sha256", r->target_sha256 ? json_string(r->target_sha256) : json_null() },
		{ "rule", field(r->rule) },
		{ "secrets", names(r->secrets, r->n_secrets) },
		{ "credentials", r->n_creds ? creds_array(r) : NULL },
		{ "decision", field(r->decision) },
		{ "layer", field(r->layer) },
		{ "approval", field(r->approval) },
		{ "status", r->status ? json_integer(r->status) : json_null() },
		{ "outcome", field(r->outcome) },
		{ "bytes_out", json_integer((json_int_t)r->bytes_out) },
		{ "bytes_in", json_integer((json_int_t)r->bytes_in) },
		{ "duration_us", json_integer((json_int_t)r->duration_us) },
		{ "websocket", r->ws ? ws_object(r->ws) : NULL },
		{ "prev", json_string(prev) },
	};
	bool ok = true;
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		if ((!strcmp(kv[i].key, "websocket") && !r->ws) ||
		    (!strcmp(kv[i].key, "credentials") && !r->n_creds))
			continue;
		else if (!kv[i].val || json_object_set_new(o, kv[i].key, kv[i].val) < 0)
			ok = false; /* set_new releases val even when it fails */
	char *s = ok ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	return s;
}

int audit_append(struct audit *a, const struct audit_record *r)
{
	char *s = render(r, a->prev);
	if (!s)
		return -ENOMEM;
	size_t len = strlen(s);
	if (len + 1 > AUDIT_LINE_MAX) {
		free(s);
		return -E2BIG;
	}
	char *line = realloc(s, len + 2);
	if (!line) {
		free(s);
		return -ENOMEM;
	}
	line[len] = '\n';
	/* One write, so that concurrent readers and a crash only ever see whole lines. */
	ssize_t w;
	do
		w = write(a->fd, line, len + 1);
	while (w < 0 && errno == EINTR);
	int rc = 0;
	if (w != (ssize_t)(len + 1)) {
		rc = w < 0 ? -errno : -ENOSPC;
		/* A short write (disk full) would leave half a line that breaks the chain. */
		if (w > 0 && ftruncate(a->fd, a->size) < 0)
			rc = -EIO;
		free(line);
		a->broken = 1;
		return rc;
	}
	a->broken = 0;
	audit_hash_line(line, len, a->prev);
	a->size += (off_t)(len + 1);
	a->size_now = a->size;
	free(line);
	if (++a->unsynced >= a->sync_every)
		rc = audit_sync(a);
	return rc;
}

int audit_reserve(struct audit *a, char *why, size_t whylen)
{
	unsigned long n = ++a->pending; /* this request's room counted from here on */
	unsigned long long need = (unsigned long long)n * AUDIT_LINE_MAX;
	struct statvfs st;

	if (a->broken)
		snprintf(why, whylen, "the session's audit log cannot be written");
	else if (a->quota && (unsigned long long)a->size_now + need > a->quota)
		snprintf(why, whylen, "the session's audit log has reached its quota of %llu bytes",
			 (unsigned long long)a->quota);
	else if (fstatvfs(a->fd, &st) == 0 &&
		 (unsigned long long)st.f_bavail * st.f_frsize < need + AUDIT_LINE_MAX)
		snprintf(why, whylen, "the session's audit log has no room left on its disk");
	else
		return 0;
	a->pending--;
	return -ENOSPC;
}

void audit_release(struct audit *a)
{
	a->pending--;
}

void audit_set_quota(struct audit *a, unsigned long long bytes)
{
	a->quota = bytes;
}

void audit_set_sync_every(struct audit *a, unsigned n)
{
	a->sync_every = n ? n : 1;
}

int audit_sync(struct audit *a)
{
	if (a->unsynced == 0)
		return 0;
	if (fdatasync(a->fd) < 0)
		return -errno;
	a->unsynced = 0;
	return 0;
}

int audit_close(struct audit *a)
{
	if (!a)
		return 0;
	int rc = audit_sync(a);
	if (close(a->fd) < 0 && rc == 0)
		rc = -errno;
	free(a);
	return rc;
}

/* ---- verification ------------------------------------------------------------------- */

static bool is_hex64(const char *s)
{
	if (strlen(s) != AUDIT_HASH_HEX)
		return false;
	for (size_t i = 0; i < AUDIT_HASH_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Why line n (holding buf[0..len), newline excluded) breaks the chain, or NULL. */
static const char *check_line(const char *buf, size_t len, size_t n, const char *expect, char *why,
			      size_t whylen)
{
	json_error_t jerr;
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o || !json_is_object(o)) {
		snprintf(why, whylen, "not a JSON object (%s)", o ? "other JSON value" : jerr.text);
		json_decref(o);
		return why;
	}
	json_t *v = json_object_get(o, "v"), *prev = json_object_get(o, "prev");
	const char *p = json_string_value(prev);
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > AUDIT_VERSION)
		snprintf(why, whylen, "missing or unknown format version \"v\"");
	else if (!p || !is_hex64(p))
		snprintf(why, whylen, "missing or malformed \"prev\"");
	else if (strcmp(p, expect) != 0 && n == 1)
		snprintf(why, whylen,
			 "\"prev\" is not the genesis hash: lines were removed from the start, "
			 "or something was inserted before this line");
	else if (strcmp(p, expect) != 0)
		snprintf(why, whylen,
			 "\"prev\" does not match line %zu: this line or line %zu was changed, "
			 "or lines were removed, inserted or reordered here",
			 n - 1, n - 1);
	else
		why = NULL;
	json_decref(o);
	return why;
}

int audit_verify(FILE *f, size_t *nlines, size_t *bad_line, char head[AUDIT_HASH_HEX + 1],
		 char *why, size_t whylen)
{
	char expect[AUDIT_HASH_HEX + 1];
	audit_hash_line(AUDIT_GENESIS, strlen(AUDIT_GENESIS), expect);
	char *buf = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	int rc = 0;
	*nlines = 0;
	*bad_line = 0;
	errno = 0;
	while ((len = getline(&buf, &cap, f)) > 0) {
		n++;
		const char *bad = NULL;
		if (buf[len - 1] != '\n') {
			bad = "incomplete last line (no newline at the end)";
		} else if ((size_t)len > AUDIT_LINE_MAX) {
			bad = "line longer than any line bulkhead writes";
		} else if (memchr(buf, '\0', (size_t)len - 1)) {
			bad = "line contains a NUL byte";
		} else {
			bad = check_line(buf, (size_t)len - 1, n, expect, why, whylen);
		}
		if (bad) {
			if (bad != why)
				snprintf(why, whylen, "%s", bad);
			*bad_line = n;
			rc = 1;
			break;
		}
		audit_hash_line(buf, (size_t)len - 1, expect);
	}
	if (rc == 0 && ferror(f))
		rc = errno ? -errno : -EIO;
	free(buf);
	*nlines = n;
	memcpy(head, expect, sizeof(expect));
	return rc;
}
