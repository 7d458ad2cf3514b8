/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vsock_backend.c: bulkhead-vsock's vhost-user side driven by a fake front end
 * over a socketpair — the set-up sequence QEMU and bulkhead-vmm send, the guest CID in the
 * config space, and refusals of bad indices, sizes and features. */
#include "lib/vhost_user.h"
#include "vsock/backend.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define MEM (1u << 20)

struct bfx {
	struct vsock_dev dev;
	struct backend b;
	int fe, be; /* front end's and back end's socket ends */
	int memfd;
	uint8_t *mem; /* the front end's mapping: its addresses are the ring "uva"s */
};

static int setup(void **state)
{
	struct bfx *f = calloc(1, sizeof(*f));
	int sp[2];
	if (!f || socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		return -1;
	f->fe = sp[0];
	f->be = sp[1];
	vsock_dev_init(&f->dev, 42, "/nonexistent/v.sock", -1);
	f->b.dev = &f->dev;
	f->memfd = memfd_create("guest", 0);
	if (f->memfd < 0 || ftruncate(f->memfd, MEM))
		return -1;
	f->mem = mmap(NULL, MEM, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
	if (f->mem == MAP_FAILED)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct bfx *f = *state;
	vsock_dev_reset(&f->dev);
	munmap(f->mem, MEM);
	close(f->memfd);
	close(f->fe);
	close(f->be);
	free(f);
	return 0;
}

/* Sends m as the front end, lets the back end handle it, returns the ack status (or the
 * reply in *reply for requests that have one). */
static uint64_t roundtrip(struct bfx *f, struct vhost_user_msg *m, struct vhost_user_msg *reply)
{
	bool has_reply = vhost_user_has_reply(m->hdr.request);
	if (!has_reply)
		m->hdr.flags |= VHOST_USER_FLAG_NEED_REPLY;
	assert_int_equal(vhost_user_send(f->fe, m, NULL), 0);
	struct vhost_user_msg in;
	assert_int_equal(vhost_user_recv(f->be, &in, VHOST_USER_TO_BACKEND, false, NULL), 0);
	uint64_t status = 0;
	assert_int_equal(backend_handle(&f->b, f->be, &in, &status), 0);
	vhost_user_msg_close_fds(&in);
	if (!has_reply)
		assert_int_equal(vhost_user_reply_ack(f->be, &in, status), 0);
	struct vhost_user_msg r;
	assert_int_equal(vhost_user_recv(f->fe, &r, VHOST_USER_TO_FRONTEND, !has_reply, NULL), 0);
	if (reply)
		*reply = r;
	return has_reply ? 0 : r.p.u64;
}

static uint64_t send_u64(struct bfx *f, uint32_t req, uint64_t v)
{
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, req, 0, sizeof(uint64_t));
	m.p.u64 = v;
	return roundtrip(f, &m, NULL);
}

static uint64_t send_state(struct bfx *f, uint32_t req, unsigned idx, unsigned num)
{
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, req, 0, sizeof(struct vhost_vring_state));
	m.p.state.index = idx;
	m.p.state.num = num;
	return roundtrip(f, &m, NULL);
}

static uint64_t send_fd(struct bfx *f, uint32_t req, unsigned idx, int fd)
{
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, req, 0, sizeof(uint64_t));
	m.p.u64 = idx;
	m.fds[0] = fd;
	m.nfds = 1;
	return roundtrip(f, &m, NULL);
}

static uint64_t get_u64(struct bfx *f, uint32_t req)
{
	struct vhost_user_msg m, r;
	vhost_user_msg_init(&m, req, 0, 0);
	roundtrip(f, &m, &r);
	return r.p.u64;
}

static void set_mem(struct bfx *f)
{
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, VHOST_USER_SET_MEM_TABLE, 0,
			    8 + sizeof(struct vhost_user_mem_region));
	m.p.mem.nregions = 1;
	m.p.mem.regions[0] = (struct vhost_user_mem_region){
		.guest_phys_addr = 0,
		.memory_size = MEM,
		.userspace_addr = (uint64_t)(uintptr_t)f->mem,
		.mmap_offset = 0,
	};
	m.fds[0] = f->memfd;
	m.nfds = 1;
	assert_int_equal(roundtrip(f, &m, NULL), 0);
}

static uint64_t set_addr(struct bfx *f, unsigned idx, uint64_t base)
{
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, VHOST_USER_SET_VRING_ADDR, 0, sizeof(struct vhost_vring_addr));
	m.p.addr = (struct vhost_vring_addr){
		.index = idx,
		.desc_user_addr = base,
		.avail_user_addr = base + 0x1000,
		.used_user_addr = base + 0x2000,
	};
	return roundtrip(f, &m, NULL);
}

static void test_setup_sequence(void **state)
{
	struct bfx *f = *state;
	uint64_t feat = get_u64(f, VHOST_USER_GET_FEATURES);
	assert_true(feat & (1ull << VIRTIO_F_VERSION_1));
	assert_true(feat & (1ull << VHOST_USER_F_PROTOCOL_FEATURES));
	assert_false(feat & (1ull << VIRTIO_RING_F_EVENT_IDX));
	uint64_t pf = get_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES);
	assert_true(pf & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK));
	assert_true(pf & (1ull << VHOST_USER_PROTOCOL_F_CONFIG));
	assert_int_equal(send_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, pf), 0);
	assert_int_equal(send_u64(f, VHOST_USER_SET_FEATURES, feat), 0);
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, VHOST_USER_SET_OWNER, 0, 0);
	assert_int_equal(roundtrip(f, &m, NULL), 0);
	set_mem(f);
	uint64_t base = (uint64_t)(uintptr_t)f->mem;
	for (unsigned q = 0; q < 2; q++) {
		assert_int_equal(send_state(f, VHOST_USER_SET_VRING_NUM, q, 64), 0);
		assert_int_equal(send_state(f, VHOST_USER_SET_VRING_BASE, q, 0), 0);
		assert_int_equal(set_addr(f, q, base + q * 0x4000), 0);
		assert_int_equal(send_fd(f, VHOST_USER_SET_VRING_KICK, q, eventfd(0, 0)), 0);
		assert_int_equal(send_fd(f, VHOST_USER_SET_VRING_CALL, q, eventfd(0, 0)), 0);
		assert_false(
			vq_ready(&f->dev.q[q])); /* protocol features: disabled until enabled */
		assert_int_equal(send_state(f, VHOST_USER_SET_VRING_ENABLE, q, 1), 0);
		assert_true(vq_ready(&f->dev.q[q]));
	}
	/* Rings resolve through the front end's addresses to our mapping of the same memfd. */
	*(volatile uint16_t *)(f->mem + 0x1000 + 2) = 0;
	assert_int_equal(f->dev.q[0].avail->idx, 0);
	/* The guest CID, for QEMU's vhost-user-vsock-device. */
	vhost_user_msg_init(&m, VHOST_USER_GET_CONFIG, 0, VHOST_USER_CONFIG_HDR_SIZE + 8);
	m.p.config.size = 8;
	struct vhost_user_msg r;
	roundtrip(f, &m, &r);
	uint64_t cid;
	memcpy(&cid, r.p.config.region, 8);
	assert_int_equal(cid, 42);
	/* Stopping: the ring's index comes back, the ring is unusable afterwards. */
	vhost_user_msg_init(&m, VHOST_USER_GET_VRING_BASE, 0, sizeof(struct vhost_vring_state));
	m.p.state.index = 1;
	roundtrip(f, &m, &r);
	assert_int_equal(r.p.state.index, 1);
	assert_int_equal(r.p.state.num, 0);
	assert_false(vq_ready(&f->dev.q[1]));
	assert_int_equal(f->b.bad_requests, 0);
}

/* Events the back end's epoll set reports now, without waiting. */
static int pending_events(int ep, struct epoll_event *ev)
{
	return epoll_wait(ep, ev, 1, 0);
}

static uint64_t stop_ring(struct bfx *f, unsigned idx)
{
	struct vhost_user_msg m, r;
	vhost_user_msg_init(&m, VHOST_USER_GET_VRING_BASE, 0, sizeof(struct vhost_vring_state));
	m.p.state.index = idx;
	roundtrip(f, &m, &r);
	assert_int_equal(r.p.state.index, idx);
	return r.p.state.num;
}

static void start_ring(struct bfx *f, unsigned idx, int kick, int call)
{
	uint64_t base = (uint64_t)(uintptr_t)f->mem + idx * 0x4000;
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_NUM, idx, 64), 0);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_BASE, idx, 0), 0);
	assert_int_equal(set_addr(f, idx, base), 0);
	/* The front end keeps its eventfds (KVM's ioeventfd holds them too): send copies. */
	assert_int_equal(send_fd(f, VHOST_USER_SET_VRING_KICK, idx, dup(kick)), 0);
	assert_int_equal(send_fd(f, VHOST_USER_SET_VRING_CALL, idx, dup(call)), 0);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_ENABLE, idx, 1), 0);
	assert_true(vq_ready(&f->dev.q[idx]));
}

/* A driver that stops a ring and starts it again (QueueReady 0 -> 1, or a device reset and
 * re-initialisation) gets the same kick eventfd back from the front end, which never closed
 * it: the back end must drop its old registration before closing its copy. Otherwise the
 * new SET_VRING_KICK fails (EEXIST) and a notify in between leaves a stale, forever readable
 * entry behind (a spinning back end). Then RESET_OWNER: nothing of the rings stays watched. */
static void test_ring_restart(void **state)
{
	struct bfx *f = *state;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev;
	assert_true(ep >= 0);
	f->dev.epfd = ep;
	int kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), call = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(send_u64(f, VHOST_USER_SET_FEATURES, backend_features()), 0);
	set_mem(f);
	start_ring(f, 0, kick, call);
	assert_int_equal(eventfd_write(kick, 1), 0);
	assert_int_equal(pending_events(ep, &ev), 1);
	assert_int_equal(ev.data.u64, VSOCK_TAG(VSOCK_TAG_KICK, 0));
	eventfd_t v;
	assert_int_equal(eventfd_read(f->dev.q[0].kick_fd, &v), 0);

	for (int round = 0; round < 3; round++) {
		stop_ring(f, 0);
		assert_false(vq_ready(&f->dev.q[0]));
		/* The guest notifies the stopped ring (KVM's ioeventfd still fires). */
		assert_int_equal(eventfd_write(kick, 1), 0);
		assert_int_equal(pending_events(ep, &ev), 0);
		start_ring(f, 0, kick, call);
		/* The pending notify now reaches the restarted ring, once. */
		assert_int_equal(pending_events(ep, &ev), 1);
		assert_int_equal(ev.data.u64, VSOCK_TAG(VSOCK_TAG_KICK, 0));
		assert_int_equal(eventfd_read(f->dev.q[0].kick_fd, &v), 0);
		assert_int_equal(pending_events(ep, &ev), 0);
	}
	/* A device reset the way QEMU's front end may send it. */
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, VHOST_USER_RESET_OWNER, 0, 0);
	assert_int_equal(roundtrip(f, &m, NULL), 0);
	assert_int_equal(eventfd_write(kick, 1), 0);
	assert_int_equal(pending_events(ep, &ev), 0);
	set_mem(f);
	start_ring(f, 0, kick, call);
	assert_int_equal(pending_events(ep, &ev), 1);
	assert_int_equal(f->b.bad_requests, 0);
	vsock_dev_reset(&f->dev);
	f->dev.epfd = -1;
	close(ep);
	close(kick);
	close(call);
}

static void test_refusals(void **state)
{
	struct bfx *f = *state;
	/* Features we never offered. */
	assert_int_equal(send_u64(f, VHOST_USER_SET_FEATURES, 1ull << VIRTIO_RING_F_EVENT_IDX),
			 EINVAL);
	assert_int_equal(
		send_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, 1ull << VHOST_USER_PROTOCOL_F_MQ),
		EINVAL);
	/* Ring indices beyond our three, sizes that are not powers of two or too large. */
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_NUM, 3, 64), EINVAL);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_NUM, 0, 0), EINVAL);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_NUM, 0, 100), EINVAL);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_NUM, 0, 65536), EINVAL);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_BASE, 0, 70000), EINVAL);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_ENABLE, 0, 2), EINVAL);
	assert_int_equal(send_fd(f, VHOST_USER_SET_VRING_KICK, 7, eventfd(0, 0)), EINVAL);
	/* Ring addresses outside the memory table, or misaligned. */
	set_mem(f);
	assert_int_equal(send_state(f, VHOST_USER_SET_VRING_NUM, 0, 64), 0);
	assert_int_equal(set_addr(f, 0, 0x1000), EINVAL); /* a guest address, not ours */
	assert_int_equal(set_addr(f, 0, (uint64_t)(uintptr_t)f->mem + MEM - 0x1000), EINVAL);
	assert_int_equal(set_addr(f, 0, (uint64_t)(uintptr_t)f->mem + 8), EINVAL);
	assert_null(f->dev.q[0].desc);
	/* Requests this device does not serve. */
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, VHOST_USER_SET_CONFIG, 0, VHOST_USER_CONFIG_HDR_SIZE + 8);
	m.p.config.size = 8;
	assert_int_equal(roundtrip(f, &m, NULL), EOPNOTSUPP);
	assert_int_equal(f->b.bad_requests, 13);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_setup_sequence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_restart, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
