/* SPDX-License-Identifier: Apache-2.0 */
/* serve/body.h: a streamed answer as the layers below HTTP make it: a file's bytes, or a
 * reader called for each piece. serve/http.c alone turns it into libmicrohttpd's response,
 * so an exec, the event stream, files and archives never see libmicrohttpd. */
#ifndef BULKHEAD_SERVE_BODY_H
#define BULKHEAD_SERVE_BODY_H

#include <stddef.h>
#include <sys/types.h>

#define SERVE_BODY_END (-1) /* read: the answer is complete */
#define SERVE_BODY_CUT (-2) /* read: the answer ends broken (the client sees no clean end) */

struct serve_body {
	/* fd >= 0: the first size bytes of this file, closed with the answer. */
	int fd;
	unsigned long long size;
	/* Else: read puts up to max bytes in buf and returns how many (> 0; it waits for them),
	 * or SERVE_BODY_END or SERVE_BODY_CUT. release(cls) runs once the answer is over, also
	 * when it never started. block: read's buffer size. */
	ssize_t (*read)(void *cls, char *buf, size_t max);
	void (*release)(void *cls);
	void *cls;
	size_t block;
};

#endif
