/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/vhost_user_mute.c: a vhost-user back end that stops answering.
 *   vhost-user-mute SOCKET REQUEST
 * Listens on SOCKET for one front end and answers it as a vsock back end would (features:
 * VERSION_1 and protocol features; protocol features: REPLY_ACK; every request acked) until
 * REQUEST (a name such as SET_FEATURES, which bulkhead-vmm sends at the driver's DRIVER_OK)
 * arrives; from then on it reads and answers nothing, the socket held open until it is
 * killed. Prints "silent at REQUEST" once it went quiet. For tests/e2e/test_vmm.sh. */
#include "lib/unix_listen.h"
#include "lib/vhost_user.h"

#include <linux/virtio_config.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int serve(int s, const char *quiet_at)
{
	struct vhost_user_msg m;
	uint64_t v;

	while (vhost_user_recv(s, &m, VHOST_USER_TO_BACKEND, false, NULL) == 0) {
		const char *name = vhost_user_request_name(m.hdr.request);
		vhost_user_msg_close_fds(&m);
		if (name && strcmp(name, quiet_at) == 0) {
			printf("silent at %s\n", name);
			fflush(stdout);
			for (;;)
				pause();
		}
		if (m.hdr.request == VHOST_USER_GET_FEATURES) {
			v = 1ull << VHOST_USER_F_PROTOCOL_FEATURES | 1ull << VIRTIO_F_VERSION_1;
			vhost_user_reply(s, &m, &v, sizeof(v));
		} else if (m.hdr.request == VHOST_USER_GET_PROTOCOL_FEATURES) {
			v = 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK;
			vhost_user_reply(s, &m, &v, sizeof(v));
		} else {
			vhost_user_reply_ack(s, &m, 0);
		}
	}
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: vhost-user-mute SOCKET REQUEST\n");
		return 2;
	}
	unlink(argv[1]);
	int l = unix_listen(argv[1], 1, false);
	int s = l < 0 ? -1 : accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0) {
		fprintf(stderr, "vhost-user-mute: cannot listen on %s\n", argv[1]);
		return 1;
	}
	return serve(s, argv[2]);
}
