/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_console.h: what a session's guest says outside the exec agent — the serial
 * console (kernel noise, and init's one framed error) and the engine's and back ends'
 * stderr — kept for --console FILE, shown with -v, and remembered to explain an end. */
#ifndef BULKHEAD_SESSION_SESSION_CONSOLE_H
#define BULKHEAD_SESSION_SESSION_CONSOLE_H

#include "lib/console_frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONSOLE_TAIL_MAX 4096
/* --console FILE keeps at most this much: a guest's flood ends there. */
#define CONSOLE_FILE_MAX (64ull << 20)

struct session_console {
	bool verbose;		 /* -v: noise to our stderr too, as far as it takes it */
	int file;		 /* --console FILE, or -1 */
	unsigned long long kept; /* bytes written to it */
	struct cframe_parser parser;
	char guest_error[CFRAME_MAX_PAYLOAD + 1]; /* init's error frame, "" if none */
	char tail[CONSOLE_TAIL_MAX];		  /* the last noise, for "why did it stop" */
	size_t tail_len;
	char diag[512]; /* the last text the engine printed on its stderr */
};

/* path: --console FILE or NULL (a file that cannot be opened is a warning). */
void console_open(struct session_console *c, const char *path, bool verbose);
/* Console bytes from the engine. 0, or -1 when they break the frame protocol. */
int console_feed(struct session_console *c, const uint8_t *buf, size_t len);
/* One read of the diagnostics pipe; *open_ turns false at its end. */
void console_read_diag(struct session_console *c, int fd, bool *open_);
/* The kernel's panic line from the tail, or NULL. */
const char *console_panic_line(struct session_console *c);
/* The last line the engine and back ends printed on stderr ("" if none): the last of
 * LABEL's own ("LABEL: ..." or "LABEL-...: ...", not a "LABEL: note: ..."), when LABEL is
 * given and printed one.
 * (Cuts the kept text after that line.) */
const char *console_last_diag(struct session_console *c, const char *label);
void console_close(struct session_console *c);

#endif
