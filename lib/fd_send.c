/* SPDX-License-Identifier: Apache-2.0 */
/* lib/fd_send.c: a message with one descriptor attached (see fd_send.h). */
#include "lib/fd_send.h"

#include <string.h>
#include <sys/socket.h>

ssize_t fd_send(int sock, const void *buf, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		memset(&c, 0, sizeof(c));
		msg.msg_control = c.buf;
		msg.msg_controllen = sizeof(c.buf);
		struct cmsghdr *h = CMSG_FIRSTHDR(&msg);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fd, sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL);
}
