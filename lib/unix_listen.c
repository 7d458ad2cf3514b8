/* SPDX-License-Identifier: Apache-2.0 */
/* lib/unix_listen.c: making and adopting listening Unix sockets (see the header). */
#include "lib/unix_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A new stream socket and the address of PATH for it. Returns the socket or -errno. */
static int unix_socket(const char *path, bool nonblock, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	return fd < 0 ? -errno : fd;
}

int unix_listen(const char *path, int backlog, bool nonblock)
{
	struct sockaddr_un sa;
	int fd = unix_socket(path, nonblock, &sa);
	if (fd >= 0 &&
	    (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int unix_connect(const char *path, bool nonblock)
{
	struct sockaddr_un sa;
	int fd = unix_socket(path, nonblock, &sa);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int unix_listen_adopt(const char *fd_text, bool nonblock)
{
	char *end;
	errno = 0;
	long v = strtol(fd_text, &end, 10);
	if (errno || end == fd_text || *end || fd_text[0] < '0' || fd_text[0] > '9' || v < 3 ||
	    v > INT_MAX)
		return -EINVAL;
	return unix_listen_check((int)v, nonblock);
}

int unix_listen_check(int fd, bool nonblock)
{
	int on = 0;
	socklen_t len = sizeof(on);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0)
		return errno == EBADF ? -EBADF : -ENOTSOCK;
	if (!on)
		return -ENOTSOCK;
	int dom = 0;
	len = sizeof(dom);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) < 0 || dom != AF_UNIX)
		return -ENOTSOCK;
	int fl = fcntl(fd, F_GETFL);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 || fl < 0 ||
	    (nonblock && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return -errno;
	return fd;
}
