/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vhost_user.c: vhost-user framing over a socketpair — sizes per request,
 * unknown requests, fd passing, surplus and missing fds, truncated messages — and the front
 * end against a back end that refuses, lies or dies. */
#include "lib/vhost_user.h"
#include "vmm/virtio/vu_front.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static int sp[2];

static int setup(void **state)
{
	(void)state;
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
}

static int teardown(void **state)
{
	(void)state;
	close(sp[0]);
	close(sp[1]);
	return 0;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Writes raw bytes as a peer would, so malformed messages can be built. */
static void raw(const struct vhost_user_hdr *h, const void *payload, size_t len)
{
	assert_int_equal(write(sp[0], h, sizeof(*h)), sizeof(*h));
	if (len)
		assert_int_equal(write(sp[0], payload, len), (ssize_t)len);
}

static void test_u64_round_trip(void **state)
{
	(void)state;
	struct vhost_user_msg m, r;

	vhost_user_msg_init(&m, VHOST_USER_SET_FEATURES, 0, 8);
	m.p.u64 = 0x123456789ull;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), 0);
	assert_int_equal(r.hdr.request, VHOST_USER_SET_FEATURES);
	assert_int_equal(r.p.u64, 0x123456789ull);
	assert_int_equal(r.nfds, 0);

	/* The back end's reply, seen by the front end. */
	assert_int_equal(vhost_user_reply(sp[1], &r, &r.p.u64, 8), 0);
	assert_int_equal(vhost_user_recv(sp[0], &m, VHOST_USER_TO_FRONTEND, false, NULL), -EBADMSG);
}

static void test_get_reply_and_ack(void **state)
{
	(void)state;
	struct vhost_user_msg m, r;
	uint64_t v = 7;

	vhost_user_msg_init(&m, VHOST_USER_GET_FEATURES, 0, 0);
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), 0);
	assert_true(vhost_user_has_reply(r.hdr.request));
	assert_int_equal(vhost_user_reply(sp[1], &r, &v, 8), 0);
	assert_int_equal(vhost_user_recv(sp[0], &m, VHOST_USER_TO_FRONTEND, false, NULL), 0);
	assert_true(m.hdr.flags & VHOST_USER_FLAG_REPLY);
	assert_int_equal(m.p.u64, 7);

	/* NEED_REPLY on a set: exactly one u64 ack comes back. */
	vhost_user_msg_init(&m, VHOST_USER_SET_OWNER, VHOST_USER_FLAG_NEED_REPLY, 0);
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), 0);
	assert_int_equal(vhost_user_reply_ack(sp[1], &r, 0), 0);
	assert_int_equal(vhost_user_recv(sp[0], &m, VHOST_USER_TO_FRONTEND, true, NULL), 0);
	assert_int_equal(m.p.u64, 0);
	/* Without NEED_REPLY no ack is sent. */
	r.hdr.flags &= ~VHOST_USER_FLAG_NEED_REPLY;
	assert_int_equal(vhost_user_reply_ack(sp[1], &r, 0), 0);
}

static void test_sizes_checked(void **state)
{
	(void)state;
	struct vhost_user_msg r;
	uint8_t junk[64] = { 0 };
	struct vhost_user_hdr h = { VHOST_USER_SET_VRING_NUM, VHOST_USER_VERSION, 4 };

	/* vring state is 8 bytes, not 4. */
	raw(&h, junk, 4);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	/* SET_OWNER carries nothing. */
	h = (struct vhost_user_hdr){ VHOST_USER_SET_OWNER, VHOST_USER_VERSION, 8 };
	raw(&h, junk, 8);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	/* vring addr is 40 bytes. */
	h = (struct vhost_user_hdr){ VHOST_USER_SET_VRING_ADDR, VHOST_USER_VERSION, 48 };
	raw(&h, junk, 48);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	/* Wrong version, and a reserved flag bit. */
	h = (struct vhost_user_hdr){ VHOST_USER_GET_FEATURES, 2, 0 };
	raw(&h, NULL, 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	h = (struct vhost_user_hdr){ VHOST_USER_GET_FEATURES, VHOST_USER_VERSION | 0x10, 0 };
	raw(&h, NULL, 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	/* A request with REPLY set is not a request. */
	h = (struct vhost_user_hdr){ VHOST_USER_GET_FEATURES,
				     VHOST_USER_VERSION | VHOST_USER_FLAG_REPLY, 0 };
	raw(&h, NULL, 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	/* Config: 12 + size, size within 256, offset + size within 256. */
	struct vhost_user_config c = { .offset = 0, .size = 4 };
	h = (struct vhost_user_hdr){ VHOST_USER_GET_CONFIG, VHOST_USER_VERSION, 12 + 4 };
	raw(&h, &c, 16);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), 0);
	c = (struct vhost_user_config){ .offset = 254, .size = 4 };
	raw(&h, &c, 16);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	c = (struct vhost_user_config){ .offset = 0, .size = 8 };
	raw(&h, &c, 16);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	/* The socket stays in step after each refusal: a good message still decodes. */
	h = (struct vhost_user_hdr){ VHOST_USER_GET_QUEUE_NUM, VHOST_USER_VERSION, 0 };
	raw(&h, NULL, 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), 0);
}

static void test_unknown_and_oversized(void **state)
{
	(void)state;
	struct vhost_user_msg r;
	uint64_t v = 0;
	struct vhost_user_hdr h = { 6 /* SET_LOG_BASE: not ours */, VHOST_USER_VERSION, 8 };

	raw(&h, &v, 8);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL),
			 -EOPNOTSUPP);
	h = (struct vhost_user_hdr){ 9999, VHOST_USER_VERSION, 0 };
	raw(&h, NULL, 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL),
			 -EOPNOTSUPP);
	assert_null(vhost_user_request_name(9999));
	assert_string_equal(vhost_user_request_name(VHOST_USER_SET_MEM_TABLE), "SET_MEM_TABLE");
	/* A size beyond the fixed maximum is refused before any payload is read. */
	h = (struct vhost_user_hdr){ VHOST_USER_SET_CONFIG, VHOST_USER_VERSION,
				     VHOST_USER_MAX_PAYLOAD + 1 };
	raw(&h, NULL, 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	/* And the sender refuses to build one. */
	vhost_user_msg_init(&r, VHOST_USER_SET_CONFIG, 0, VHOST_USER_MAX_PAYLOAD + 1);
	assert_int_equal(vhost_user_send(sp[0], &r, NULL), -EMSGSIZE);
}

static void test_truncated(void **state)
{
	(void)state;
	struct vhost_user_msg r;
	struct vhost_user_hdr h = { VHOST_USER_SET_FEATURES, VHOST_USER_VERSION, 8 };
	uint32_t half = 0;

	raw(&h, &half, 4); /* 4 of 8 payload bytes, then the peer goes away */
	shutdown(sp[0], SHUT_WR);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL),
			 -ECONNRESET);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL),
			 -ECONNRESET);
}

static void test_truncated_header(void **state)
{
	(void)state;
	struct vhost_user_msg r;
	uint32_t part[2] = { VHOST_USER_GET_FEATURES, VHOST_USER_VERSION };

	assert_int_equal(write(sp[0], part, sizeof(part)), sizeof(part));
	shutdown(sp[0], SHUT_WR);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL),
			 -ECONNRESET);
}

static void test_fd_passing(void **state)
{
	(void)state;
	struct vhost_user_msg m, r;
	int mfd = memfd_create("vu-test", MFD_CLOEXEC);
	struct stat a, b;

	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 8192), 0);
	vhost_user_msg_init(&m, VHOST_USER_SET_MEM_TABLE, 0, 8 + 2 * 32);
	m.p.mem.nregions = 2;
	m.p.mem.regions[0] = (struct vhost_user_mem_region){ 0, 4096, 0x7f0000000000, 0 };
	m.p.mem.regions[1] = (struct vhost_user_mem_region){ 0x100000, 4096, 0x7f0000001000, 4096 };
	m.fds[0] = m.fds[1] = mfd;
	m.nfds = 2;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), 0);
	assert_int_equal(r.nfds, 2);
	assert_int_equal(r.p.mem.nregions, 2);
	assert_int_equal(r.p.mem.regions[1].mmap_offset, 4096);
	/* The received fds are the same file, and close-on-exec. */
	assert_int_equal(fstat(mfd, &a), 0);
	assert_int_equal(fstat(r.fds[1], &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_true(fcntl(r.fds[0], F_GETFD) & FD_CLOEXEC);
	int got = r.fds[0];
	vhost_user_msg_close_fds(&r);
	assert_false(fd_open(got));

	/* nregions says 2 but only one fd comes: refused, and the one fd is closed. */
	m.nfds = 1;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	assert_int_equal(r.nfds, 0);
	/* nregions 0 and 9 are both impossible. */
	m.p.mem.nregions = 0;
	m.hdr.size = 8;
	m.nfds = 0;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	/* A wrapping region is refused. */
	m.p.mem.nregions = 1;
	m.hdr.size = 8 + 32;
	m.p.mem.regions[0] = (struct vhost_user_mem_region){ UINT64_MAX - 10, 4096, 0, 0 };
	m.nfds = 1;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	close(mfd);
}

static void test_surplus_fds_closed(void **state)
{
	(void)state;
	struct vhost_user_msg m, r;
	int e1 = memfd_create("a", MFD_CLOEXEC), e2 = memfd_create("b", MFD_CLOEXEC);

	/* KICK carries one fd; a second one is closed on arrival, the message accepted. */
	vhost_user_msg_init(&m, VHOST_USER_SET_VRING_KICK, 0, 8);
	m.p.u64 = 1;
	m.fds[0] = e1;
	m.fds[1] = e2;
	m.nfds = 2;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), 0);
	assert_int_equal(r.nfds, 1);
	assert_true(fd_open(r.fds[0]));
	/* The fd that was dropped was the next number after the kept one (recvmsg installs
	 * them in order); it must be closed now. */
	assert_false(fd_open(r.fds[0] + 1));
	vhost_user_msg_close_fds(&r);

	/* NOFD: no fd expected; one sent anyway is closed. A request that carries none
	 * (SET_FEATURES) drops any. */
	m.p.u64 = 1 | VHOST_USER_VRING_NOFD;
	m.nfds = 1;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), 0);
	assert_int_equal(r.nfds, 0);
	/* KICK without its fd, or with junk bits in the index word: refused. */
	m.p.u64 = 1;
	m.nfds = 0;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	m.p.u64 = 1 | (1ull << 20);
	m.nfds = 1;
	assert_int_equal(vhost_user_send(sp[0], &m, NULL), 0);
	assert_int_equal(vhost_user_recv(sp[1], &r, VHOST_USER_TO_BACKEND, false, NULL), -EBADMSG);
	close(e1);
	close(e2);
}

/* A scripted back end: answers GET_FEATURES and GET_PROTOCOL_FEATURES honestly, then
 * misbehaves at SET_OWNER as told. */
enum fake_mode { FAKE_NACK, FAKE_WRONG_REQUEST, FAKE_CLOSE, FAKE_SILENT, FAKE_NO_REPLY_ACK };
static enum fake_mode fake_mode;

static void *fake_backend(void *arg)
{
	int s = *(int *)arg;
	struct vhost_user_msg m;
	uint64_t v;

	while (vhost_user_recv(s, &m, VHOST_USER_TO_BACKEND, false, NULL) == 0) {
		switch (m.hdr.request) {
		case VHOST_USER_GET_FEATURES:
			v = 1ull << VHOST_USER_F_PROTOCOL_FEATURES | 1ull << 32;
			vhost_user_reply(s, &m, &v, 8);
			break;
		case VHOST_USER_GET_PROTOCOL_FEATURES:
			v = fake_mode == FAKE_NO_REPLY_ACK
				    ? 0
				    : 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK;
			vhost_user_reply(s, &m, &v, 8);
			break;
		case VHOST_USER_SET_OWNER:
			if (fake_mode == FAKE_NACK) {
				vhost_user_reply_ack(s, &m, 1);
			} else if (fake_mode == FAKE_WRONG_REQUEST) {
				m.hdr.request = VHOST_USER_SET_FEATURES;
				vhost_user_reply_ack(s, &m, 0);
			} else if (fake_mode == FAKE_CLOSE) {
				close(s);
				return NULL;
			} else {
				sleep(1); /* FAKE_SILENT: longer than the front end waits */
			}
			break;
		default:
			vhost_user_reply_ack(s, &m, 0);
		}
	}
	close(s);
	return NULL;
}

static int front_against(enum fake_mode mode, struct vu_front *f)
{
	int s[2];
	pthread_t th;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
	fake_mode = mode;
	assert_int_equal(pthread_create(&th, NULL, fake_backend, &s[1]), 0);
	assert_int_equal(vu_front_adopt(f, s[0], "fake", 100, -1), 0);
	int err = vu_front_handshake(f, 2);
	vu_front_close(f);
	pthread_join(th, NULL);
	return err;
}

static void test_front_refusals(void **state)
{
	(void)state;
	struct vu_front f;

	assert_int_equal(front_against(FAKE_NACK, &f), -EREMOTEIO);
	assert_non_null(strstr(f.why, "SET_OWNER: refused"));
	assert_int_equal(front_against(FAKE_WRONG_REQUEST, &f), -EPROTO);
	assert_int_equal(front_against(FAKE_CLOSE, &f), -ECONNRESET);
	assert_non_null(strstr(f.why, "closed its socket"));
	assert_int_equal(front_against(FAKE_SILENT, &f), -ETIMEDOUT);
	assert_int_equal(front_against(FAKE_NO_REPLY_ACK, &f), -EPROTONOSUPPORT);
	/* The first failure sticks: nothing more is sent on a broken conversation. */
	assert_int_equal(vu_front_set_features(&f, 0), -EPROTONOSUPPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_u64_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_reply_and_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sizes_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_and_oversized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_passing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_surplus_fds_closed, setup, teardown),
		cmocka_unit_test(test_front_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
