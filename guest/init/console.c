/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/console.c: the only writer of frames; the command never sees this fd. */
#include "guest/init/init.h"
#include "lib/console_frame.h"
#include "lib/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

static int console_fd = -1;
static uint64_t console_seq;

int console_open(const char *dev)
{
	int fd = open(dev, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Raw: no \n -> \r\n, no flow-control characters; frames are binary. */
	struct termios t;
	if (tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(fd, TCSANOW, &t);
	}
	console_fd = fd;
	return 0;
}

int console_send(int type, const void *buf, size_t len)
{
	if (console_fd < 0 || len > CFRAME_MAX_PAYLOAD)
		return -EINVAL;
	char hdr[CFRAME_MAX_HEADER], trailer[CFRAME_TRAILER_LEN + 1];
	size_t hlen = cframe_encode(hdr, trailer, type, console_seq, buf, len);
	struct iovec iov[3] = {
		{ hdr, hlen },
		{ (void *)(uintptr_t)buf, len },
		{ trailer, CFRAME_TRAILER_LEN },
	};
	console_seq++;
	return io_writev_full(console_fd, iov, 3);
}

void console_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	console_send(CFRAME_ERROR, msg, (size_t)n);
}
