/* SPDX-License-Identifier: Apache-2.0 */
/* oci/console.c: --console-socket. The caller (conmon, containerd's shim) listens on a Unix
 * socket for the terminal's master side; we make a pseudo-terminal, send the master with
 * SCM_RIGHTS (the terminal's name as the message, as runc does) and keep the other side as the
 * container's stdin, stdout and stderr. The session relays it to the guest's own terminal. */
#include "lib/fd_send.h"
#include "oci/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

static int send_master(const char *socket_path, int master, const char *name, char *err,
		       size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(socket_path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "--console-socket %s: path too long", socket_path);
		return -1;
	}
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "--console-socket %s: %s", socket_path, strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	ssize_t n = fd_send(s, name, strlen(name), master);
	int e = errno;
	close(s);
	if (n < 0) {
		snprintf(err, errlen, "--console-socket %s: %s", socket_path, strerror(e));
		return -1;
	}
	return 0;
}

int oci_console_open(const char *socket_path, unsigned rows, unsigned cols, char *err,
		     size_t errlen)
{
	char name[64];
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
	    ptsname_r(master, name, sizeof(name)) != 0) {
		snprintf(err, errlen, "a pseudo-terminal: %s", strerror(errno));
		if (master >= 0)
			close(master);
		return -1;
	}
	int tty = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty < 0) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		close(master);
		return -1;
	}
	if (rows && cols) {
		struct winsize ws = { .ws_row = (unsigned short)rows,
				      .ws_col = (unsigned short)cols };
		ioctl(tty, TIOCSWINSZ, &ws);
	}
	int rc = send_master(socket_path, master, name, err, errlen);
	close(master);
	if (rc < 0) {
		close(tty);
		return -1;
	}
	return tty;
}

int oci_console_attach(int tty)
{
	if (setsid() < 0 && errno != EPERM)
		return -1;
	if (ioctl(tty, TIOCSCTTY, 0) < 0)
		return -1;
	for (int fd = 0; fd < 3; fd++)
		if (dup2(tty, fd) < 0)
			return -1;
	if (tty > 2)
		close(tty);
	return 0;
}
