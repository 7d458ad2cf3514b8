/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_diag.c: why a helper stopped, in its own words: the last line the session's
 * helpers wrote to their shared diagnostics pipe, appended to the session's error. */
#include "session/session.h"
#include "lib/san.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void session_diag_last(struct session *s, char *err, size_t errlen)
{
	char buf[4096], *line = NULL;
	size_t got = 0;
	struct pollfd p = { .fd = s->diag[0], .events = POLLIN };
	while (s->diag[0] >= 0 && got < sizeof(buf) - 1 && poll(&p, 1, 50) > 0) {
		ssize_t n = read(s->diag[0], buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	/* The last line that is the helpers' own words. */
	for (;;) {
		while (got && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
			buf[--got] = '\0';
		line = strrchr(buf, '\n');
		line = line ? line + 1 : buf;
		if (line == buf || !san_runtime_line(line))
			break;
		got = (size_t)(line - buf);
		buf[got] = '\0';
	}
	size_t n = strlen(err);
	if (*line && n < errlen)
		snprintf(err + n, errlen - n, ": %s", line);
}
