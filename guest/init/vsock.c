/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/vsock.c: the guest's vsock sockets: one listening on a port, one to the host. */
#include "guest/init/init.h"

#include <errno.h>
#include <sys/socket.h> /* before vm_sockets.h: older kernel headers need sockaddr */
#include <linux/vm_sockets.h>
#include <unistd.h>

static int failed(int fd)
{
	int e = errno;
	if (fd >= 0)
		close(fd);
	return -e;
}

int vsock_listen(unsigned port)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
				  .svm_cid = VMADDR_CID_ANY,
				  .svm_port = port };
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0)
		return failed(fd);
	return fd;
}

int vsock_connect_host(unsigned port)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
				  .svm_cid = VMADDR_CID_HOST,
				  .svm_port = port };
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return failed(fd);
	return fd;
}
