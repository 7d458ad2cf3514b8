/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_console.c: the guest's serial console and the engine's stderr during a
 * session (see session_console.h). */
#include "session/session_console.h"
#include "session/out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void keep_tail(char *tail, size_t *tail_len, size_t max, const uint8_t *buf, size_t len)
{
	if (len >= max) {
		memcpy(tail, buf + len - max, max);
		*tail_len = max;
		return;
	}
	if (*tail_len + len > max) {
		size_t drop = *tail_len + len - max;
		memmove(tail, tail + drop, *tail_len - drop);
		*tail_len -= drop;
	}
	memcpy(tail + *tail_len, buf, len);
	*tail_len += len;
}

/* Text for --console FILE, up to its bound, and then one line saying so. */
static void keep_file(struct session_console *c, const void *buf, size_t len)
{
	static const char cut[] = "\n[bulkhead: console output beyond 64 MiB not kept]\n";
	if (c->file < 0 || c->kept >= CONSOLE_FILE_MAX)
		return;
	if (len > CONSOLE_FILE_MAX - c->kept) {
		write_all(c->file, buf, (size_t)(CONSOLE_FILE_MAX - c->kept));
		write_all(c->file, cut, sizeof(cut) - 1);
		c->kept = CONSOLE_FILE_MAX;
		return;
	}
	write_all(c->file, buf, len);
	c->kept += len;
}

static void on_noise(void *ctx, const uint8_t *buf, size_t len)
{
	struct session_console *c = ctx;
	keep_file(c, buf, len);
	/* -v: as much as our stderr takes now; a reader that stopped loses noise, not time. */
	if (c->verbose)
		out_try(2, buf, len);
	keep_tail(c->tail, &c->tail_len, sizeof(c->tail) - 1, buf, len);
}

/* The only frame init sends: why the session could not start. */
static int on_frame(void *ctx, int type, const uint8_t *payload, size_t len)
{
	struct session_console *c = ctx;
	if (type != CFRAME_ERROR || c->guest_error[0])
		return -1; /* nothing may follow it */
	memcpy(c->guest_error, payload, len);
	c->guest_error[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (c->guest_error[i] < 0x20)
			c->guest_error[i] = ' ';
	return 0;
}

void console_open(struct session_console *c, const char *path, bool verbose)
{
	memset(c, 0, sizeof(*c));
	c->verbose = verbose;
	c->file = -1;
	struct cframe_sink sink = { .noise = on_noise, .frame = on_frame, .ctx = c };
	cframe_parser_init(&c->parser, &sink);
	if (!path)
		return;
	c->file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (c->file < 0)
		fprintf(stderr, "bulkhead: warning: --console %s: %s\n", path, strerror(errno));
}

int console_feed(struct session_console *c, const uint8_t *buf, size_t len)
{
	return cframe_feed(&c->parser, buf, len);
}

void console_read_diag(struct session_console *c, int fd, bool *open_)
{
	char buf[1024];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n <= 0) {
		*open_ = n < 0 && errno == EINTR;
		return;
	}
	keep_file(c, buf, (size_t)n);
	if (c->verbose)
		out_try(2, buf, (size_t)n);
	/* Keep the last text: QEMU's errors are one line each. */
	size_t dl = strlen(c->diag);
	keep_tail(c->diag, &dl, sizeof(c->diag) - 1, (const uint8_t *)buf, (size_t)n);
	c->diag[dl] = '\0';
}

const char *console_panic_line(struct session_console *c)
{
	c->tail[c->tail_len] = '\0';
	char *p = strstr(c->tail, "Kernel panic - not syncing");
	if (!p)
		return NULL;
	p[strcspn(p, "\r\n")] = '\0';
	return p;
}

const char *console_last_diag(struct session_console *c, const char *label)
{
	char *text = c->diag;
	size_t n = strlen(text), ll = label ? strlen(label) : 0;
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		text[--n] = '\0';
	/* The last line that process said, when it said one: a back end's complaint about the
	 * engine's end comes after the engine's own reason, and so may the engine's own notes
	 * ("LABEL: note: ..."), which are never it. */
	for (char *end = text + n; ll && end > text;) {
		char *line = end;
		while (line > text && line[-1] != '\n')
			line--;
		if ((size_t)(end - line) > ll && !strncmp(line, label, ll) &&
		    (line[ll] == ':' || line[ll] == '-') &&
		    strncmp(line + ll, ": note: ", 8)) { /* a note is never the reason */
			while (end > line && (end[-1] == '\r' || end[-1] == '\n'))
				end--;
			*end = '\0';
			return line;
		}
		end = line > text ? line - 1 : text;
	}
	char *nl = strrchr(text, '\n');
	return nl ? nl + 1 : text;
}

void console_close(struct session_console *c)
{
	if (c->file >= 0)
		close(c->file);
	c->file = -1;
}
