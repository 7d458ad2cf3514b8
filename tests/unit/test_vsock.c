/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vsock.c: bulkhead-vsock's queues and state machine driven as a hostile guest
 * would — a fake guest memory region holds real split rings; every malformed chain or packet
 * must be rejected, counted and (where a connection exists) answered with a reset. */
#include "vsock/conn.h"
#include "vsock/vsock.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#define MEM_SIZE (4u << 20)
#define UVA_BASE 0x7f0000000000ull /* the "front end's" address of guest-physical 0 */
#define QSIZE	 16
#define CID	 3
#define DATA	 0x100000u /* guest buffers from here on */

struct fx {
	struct vsock_dev dev;
	uint8_t *mem;
	char dir[64], prefix[96];
	uint16_t avail[VSOCK_NQUEUES], used_seen[VSOCK_NQUEUES];
	uint32_t next_data; /* bump allocator for guest buffers */
	uint16_t next_desc[VSOCK_NQUEUES];
};

static uint64_t ring_gpa(unsigned q)
{
	return 0x1000ull * 4 * q; /* desc at +0, avail at +0x1000, used at +0x2000 */
}

static struct vring_desc *desc(struct fx *f, unsigned q)
{
	return (struct vring_desc *)(f->mem + ring_gpa(q));
}
static struct vring_avail *avail(struct fx *f, unsigned q)
{
	return (struct vring_avail *)(f->mem + ring_gpa(q) + 0x1000);
}
static struct vring_used *used(struct fx *f, unsigned q)
{
	return (struct vring_used *)(f->mem + ring_gpa(q) + 0x2000);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->mem = aligned_alloc(4096, MEM_SIZE);
	memset(f->mem, 0, MEM_SIZE);
	strcpy(f->dir, "/tmp/test_vsock.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->prefix, sizeof(f->prefix), "%s/v.sock", f->dir);
	vsock_dev_init(&f->dev, CID, f->prefix, -1);
	if (vmem_add(&f->dev.mem, 0, UVA_BASE, MEM_SIZE, f->mem, NULL, 0))
		return -1;
	for (unsigned q = 0; q < VSOCK_NQUEUES; q++) {
		struct vq *vq = &f->dev.q[q];
		vq->num = QSIZE;
		vq->desc_addr = UVA_BASE + ring_gpa(q);
		vq->avail_addr = vq->desc_addr + 0x1000;
		vq->used_addr = vq->desc_addr + 0x2000;
		vq->enabled = true;
		if (vq_map(vq, &f->dev.mem))
			return -1;
	}
	f->next_data = DATA;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	vsock_dev_reset(&f->dev);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f->mem);
	free(f);
	return 0;
}

static uint64_t alloc_buf(struct fx *f, const void *data, uint32_t len)
{
	uint64_t gpa = f->next_data;
	if (data)
		memcpy(f->mem + gpa, data, len);
	f->next_data += (len + 63) & ~63u;
	if (f->next_data > MEM_SIZE - 0x20000)
		f->next_data = DATA;
	return gpa;
}

/* Puts descriptor chain [first..first+n) on queue q's avail ring. */
static void publish(struct fx *f, unsigned q, uint16_t head)
{
	struct vring_avail *a = avail(f, q);
	a->ring[f->avail[q] % QSIZE] = head;
	f->avail[q]++;
	__atomic_store_n(&a->idx, f->avail[q], __ATOMIC_RELEASE);
}

static uint16_t new_desc(struct fx *f, unsigned q, uint64_t addr, uint32_t len, uint16_t flags)
{
	uint16_t i = f->next_desc[q]++ % QSIZE;
	desc(f, q)[i] = (struct vring_desc){ .addr = addr, .len = len, .flags = flags };
	return i;
}

static struct virtio_vsock_hdr hdr(uint16_t op, uint32_t gport, uint32_t hport, uint32_t len)
{
	return (struct virtio_vsock_hdr){
		.src_cid = CID,
		.dst_cid = 2,
		.src_port = gport,
		.dst_port = hport,
		.len = len,
		.type = VIRTIO_VSOCK_TYPE_STREAM,
		.op = op,
		.buf_alloc = 65536,
	};
}

/* The Linux driver's shape: header in one descriptor, payload in the next. */
static void guest_send(struct fx *f, struct virtio_vsock_hdr h, const void *payload, uint32_t plen)
{
	uint16_t d0 = new_desc(f, VSOCK_Q_TX, alloc_buf(f, &h, sizeof(h)), sizeof(h), 0);
	if (plen) {
		uint16_t d1 = new_desc(f, VSOCK_Q_TX, alloc_buf(f, payload, plen), plen, 0);
		desc(f, VSOCK_Q_TX)[d0].flags = VRING_DESC_F_NEXT;
		desc(f, VSOCK_Q_TX)[d0].next = d1;
	}
	publish(f, VSOCK_Q_TX, d0);
	vsock_kick(&f->dev);
}

static void post_rx(struct fx *f, unsigned n, uint32_t size)
{
	for (unsigned i = 0; i < n; i++)
		publish(f, VSOCK_Q_RX,
			new_desc(f, VSOCK_Q_RX, alloc_buf(f, NULL, size), size,
				 VRING_DESC_F_WRITE));
	vsock_kick(&f->dev);
}

/* Next packet the device put into rx, or 0 if none; payload copied to data. */
static int take_rx(struct fx *f, struct virtio_vsock_hdr *h, void *data, size_t max)
{
	struct vring_used *u = used(f, VSOCK_Q_RX);
	if (f->used_seen[VSOCK_Q_RX] == __atomic_load_n(&u->idx, __ATOMIC_ACQUIRE))
		return 0;
	struct vring_used_elem e = u->ring[f->used_seen[VSOCK_Q_RX]++ % QSIZE];
	struct vring_desc d = desc(f, VSOCK_Q_RX)[e.id];
	assert_true(e.len >= sizeof(*h) && e.len <= d.len);
	memcpy(h, f->mem + d.addr, sizeof(*h));
	assert_int_equal(h->len, e.len - sizeof(*h));
	if (data)
		memcpy(data, f->mem + d.addr + sizeof(*h), h->len < max ? h->len : max);
	return 1;
}

static int host_listen(struct fx *f, uint32_t port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", f->prefix, port);
	unlink(sa.sun_path);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 512), 0); /* room for a full connection table */
	return l;
}

/* Guest connects to host port 1000 from guest port 7; returns the host's accepted fd. */
static int connect_guest_to_host(struct fx *f)
{
	int l = host_listen(f, 1000);
	post_rx(f, 4, 4096);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_REQUEST, 7, 1000, 0), NULL, 0);
	struct virtio_vsock_hdr h;
	assert_true(take_rx(f, &h, NULL, 0));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RESPONSE);
	assert_int_equal(h.dst_port, 7);
	assert_int_equal(h.src_port, 1000);
	assert_int_equal(h.buf_alloc, VSOCK_BUF_ALLOC);
	int s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	close(l);
	return s;
}

/* The connection was reset: RST to the guest, nothing left in the table. */
static void assert_reset(struct fx *f, uint32_t gport, uint32_t hport)
{
	struct virtio_vsock_hdr h;
	post_rx(f, 1, 4096);
	int got_rst = 0;
	while (take_rx(f, &h, NULL, 0))
		got_rst |=
			h.op == VIRTIO_VSOCK_OP_RST && h.dst_port == gport && h.src_port == hport;
	assert_true(got_rst);
	assert_int_equal(vsock_conn_count(&f->dev), 0);
}

/* ---- the memory check ---- */

static void test_vmem_edges(void **state)
{
	struct fx *f = *state;
	const struct vmem *m = &f->dev.mem;
	assert_ptr_equal(vmem_ptr(m, VMEM_GPA, 0, MEM_SIZE), f->mem);
	assert_ptr_equal(vmem_ptr(m, VMEM_UVA, UVA_BASE + 5, 1), f->mem + 5);
	assert_null(vmem_ptr(m, VMEM_GPA, MEM_SIZE, 1));
	assert_null(vmem_ptr(m, VMEM_GPA, MEM_SIZE - 4, 8));
	assert_null(vmem_ptr(m, VMEM_GPA, 0, 0));
	assert_null(vmem_ptr(m, VMEM_GPA, UINT64_MAX, 2));
	assert_null(vmem_ptr(m, VMEM_GPA, 16, UINT64_MAX));
	assert_null(vmem_ptr(m, VMEM_UVA, 0, 1)); /* a guest address is not a front-end one */
	assert_null(vmem_ptr(m, VMEM_UVA, UVA_BASE - 1, 2));
	struct vmem v = { 0 };
	uint8_t b[64];
	assert_int_equal(vmem_add(&v, UINT64_MAX - 8, 0, 64, b, NULL, 0), -EINVAL);
	assert_int_equal(vmem_add(&v, 0, 0, 64, b, NULL, 0), 0);
	assert_int_equal(vmem_add(&v, 32, 1000, 64, b, NULL, 0), -EINVAL); /* overlaps in GPA */
}

/* ---- descriptor chains ---- */

static void expect_bad_chain(struct fx *f, uint16_t head)
{
	uint64_t before = f->dev.q[VSOCK_Q_TX].errors;
	publish(f, VSOCK_Q_TX, head);
	vsock_kick(&f->dev);
	assert_int_equal(f->dev.q[VSOCK_Q_TX].errors, before + 1);
	assert_false(f->dev.q[VSOCK_Q_TX].broken);
	/* It went back to the guest, empty, so the ring keeps moving. */
	struct vring_used *u = used(f, VSOCK_Q_TX);
	assert_int_equal(u->idx, f->avail[VSOCK_Q_TX]);
	assert_int_equal(u->ring[(u->idx - 1) % QSIZE].len, 0);
}

static void test_chain_loop(void **state)
{
	struct fx *f = *state;
	struct virtio_vsock_hdr h = hdr(VIRTIO_VSOCK_OP_REQUEST, 1, 2, 0);
	uint16_t a = new_desc(f, VSOCK_Q_TX, alloc_buf(f, &h, 44), 44, VRING_DESC_F_NEXT);
	uint16_t b = new_desc(f, VSOCK_Q_TX, alloc_buf(f, NULL, 8), 8, VRING_DESC_F_NEXT);
	desc(f, VSOCK_Q_TX)[a].next = b;
	desc(f, VSOCK_Q_TX)[b].next = a;
	expect_bad_chain(f, a);
	/* A self-loop too. */
	desc(f, VSOCK_Q_TX)[b].next = b;
	expect_bad_chain(f, b);
	assert_int_equal(vsock_conn_count(&f->dev), 0);
}

static void test_chain_bad_indices_and_addresses(void **state)
{
	struct fx *f = *state;
	uint16_t a = new_desc(f, VSOCK_Q_TX, alloc_buf(f, NULL, 44), 44, VRING_DESC_F_NEXT);
	desc(f, VSOCK_Q_TX)[a].next = QSIZE; /* one past the table */
	expect_bad_chain(f, a);
	uint16_t b = new_desc(f, VSOCK_Q_TX, MEM_SIZE - 8, 44, 0); /* runs off guest RAM */
	expect_bad_chain(f, b);
	uint16_t c = new_desc(f, VSOCK_Q_TX, UINT64_MAX - 10, 44, 0); /* wraps */
	expect_bad_chain(f, c);
	uint16_t d = new_desc(f, VSOCK_Q_TX, alloc_buf(f, NULL, 44), 44, VRING_DESC_F_INDIRECT);
	expect_bad_chain(f, d);
	/* Readable after writable breaks the spec's order. */
	uint16_t e = new_desc(f, VSOCK_Q_TX, alloc_buf(f, NULL, 8), 8,
			      VRING_DESC_F_WRITE | VRING_DESC_F_NEXT);
	uint16_t g = new_desc(f, VSOCK_Q_TX, alloc_buf(f, NULL, 44), 44, 0);
	desc(f, VSOCK_Q_TX)[e].next = g;
	expect_bad_chain(f, e);
	/* A head outside the ring: counted, slot skipped, nothing used. */
	uint64_t before = f->dev.q[VSOCK_Q_TX].errors;
	publish(f, VSOCK_Q_TX, QSIZE + 3);
	vsock_kick(&f->dev);
	assert_int_equal(f->dev.q[VSOCK_Q_TX].errors, before + 1);
}

static void test_avail_index_runs_away(void **state)
{
	struct fx *f = *state;
	/* More buffers claimed than the ring holds: the ring is broken, we stop touching it. */
	__atomic_store_n(&avail(f, VSOCK_Q_TX)->idx, QSIZE + 1, __ATOMIC_RELEASE);
	vsock_kick(&f->dev);
	assert_true(f->dev.q[VSOCK_Q_TX].broken);
	assert_int_equal(used(f, VSOCK_Q_TX)->idx, 0);
	vsock_kick(&f->dev); /* and stays quiet */
	assert_int_equal(f->dev.q[VSOCK_Q_TX].errors, 1);
}

/* ---- packets ---- */

static void test_guest_connect_and_data(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, 5), "hello", 5);
	char buf[16] = { 0 };
	assert_int_equal(read(s, buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "hello", 5);
	/* Host -> guest. */
	assert_int_equal(write(s, "world!", 6), 6);
	vsock_host_event(&f->dev, 0, 1 /* EPOLLIN */);
	struct virtio_vsock_hdr h;
	char data[16];
	assert_true(take_rx(f, &h, data, sizeof(data)));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RW);
	assert_int_equal(h.len, 6);
	assert_memory_equal(data, "world!", 6);
	/* Host closes its side: the guest hears SHUTDOWN(SEND). */
	shutdown(s, SHUT_WR);
	vsock_host_event(&f->dev, 0, 1);
	assert_true(take_rx(f, &h, NULL, 0));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_SHUTDOWN);
	assert_int_equal(h.flags, VIRTIO_VSOCK_SHUTDOWN_SEND);
	/* Guest closes: both flags; we answer RST and forget the connection. */
	struct virtio_vsock_hdr sh = hdr(VIRTIO_VSOCK_OP_SHUTDOWN, 7, 1000, 0);
	sh.flags = VIRTIO_VSOCK_SHUTDOWN_SEND | VIRTIO_VSOCK_SHUTDOWN_RCV;
	guest_send(f, sh, NULL, 0);
	assert_true(take_rx(f, &h, NULL, 0));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RST);
	assert_int_equal(vsock_conn_count(&f->dev), 0);
	assert_int_equal(read(s, buf, sizeof(buf)), 0); /* EOF on the host side */
	assert_int_equal(f->dev.st.resets, 0);
	close(s);
}

static void test_connect_without_listener_is_reset(void **state)
{
	struct fx *f = *state;
	post_rx(f, 2, 4096);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_REQUEST, 9, 4242, 0), NULL, 0);
	struct virtio_vsock_hdr h;
	assert_true(take_rx(f, &h, NULL, 0));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RST);
	assert_int_equal(h.dst_port, 9);
	assert_int_equal(h.src_port, 4242);
	assert_int_equal(f->dev.st.refused, 1);
	assert_int_equal(vsock_conn_count(&f->dev), 0);
}

static void test_short_header(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	struct virtio_vsock_hdr h = hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, 0);
	publish(f, VSOCK_Q_TX,
		new_desc(f, VSOCK_Q_TX, alloc_buf(f, &h, sizeof(h)), sizeof(h) - 4, 0));
	vsock_kick(&f->dev);
	assert_int_equal(f->dev.st.bad_chain, 1);
	/* The header could not be read, so no connection was named; the real one lives on. */
	assert_int_equal(vsock_conn_count(&f->dev), 1);
	close(s);
}

static void test_len_beyond_descriptor(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	struct virtio_vsock_hdr h = hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, 100);
	guest_send(f, h, "0123456789", 10); /* claims 100, carries 10 */
	assert_int_equal(f->dev.st.bad_len, 1);
	assert_reset(f, 7, 1000);
	char b[8];
	assert_int_equal(read(s, b, sizeof(b)), 0); /* nothing leaked to the host, then EOF */
	close(s);
}

static void test_len_on_control_op_and_oversize(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	static char big[VSOCK_MAX_PKT + 1];
	guest_send(f, hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, sizeof(big)), big, sizeof(big));
	assert_int_equal(f->dev.st.bad_len, 1);
	assert_reset(f, 7, 1000);
	close(s);
	s = connect_guest_to_host(f);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 7, 1000, 4), "abcd", 4);
	assert_int_equal(f->dev.st.bad_len, 2);
	assert_reset(f, 7, 1000);
	close(s);
}

static void test_unknown_op_and_type(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	guest_send(f, hdr(99, 7, 1000, 0), NULL, 0);
	assert_int_equal(f->dev.st.bad_op, 1);
	assert_reset(f, 7, 1000);
	close(s);
	s = connect_guest_to_host(f);
	struct virtio_vsock_hdr h = hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, 0);
	h.type = VIRTIO_VSOCK_TYPE_SEQPACKET; /* not offered */
	guest_send(f, h, NULL, 0);
	assert_int_equal(f->dev.st.bad_type, 1);
	assert_reset(f, 7, 1000);
	close(s);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_INVALID, 7, 1000, 0), NULL, 0);
	assert_int_equal(f->dev.st.bad_op, 2);
}

static void test_ops_out_of_order(void **state)
{
	struct fx *f = *state;
	/* Data for a connection that does not exist. */
	post_rx(f, 1, 4096);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_RW, 5, 1000, 3), "abc", 3);
	assert_int_equal(f->dev.st.unknown_conn, 1);
	assert_reset(f, 5, 1000);
	/* RESPONSE on a connection the guest itself opened. */
	int s = connect_guest_to_host(f);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_RESPONSE, 7, 1000, 0), NULL, 0);
	assert_int_equal(f->dev.st.bad_state, 1);
	assert_reset(f, 7, 1000);
	close(s);
	/* A second REQUEST for a live connection. */
	s = connect_guest_to_host(f);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_REQUEST, 7, 1000, 0), NULL, 0);
	assert_int_equal(f->dev.st.bad_state, 2);
	assert_reset(f, 7, 1000);
	close(s);
	/* Data after the guest said it would send no more; bad shutdown flags. */
	s = connect_guest_to_host(f);
	struct virtio_vsock_hdr sh = hdr(VIRTIO_VSOCK_OP_SHUTDOWN, 7, 1000, 0);
	sh.flags = VIRTIO_VSOCK_SHUTDOWN_SEND;
	guest_send(f, sh, NULL, 0);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, 1), "x", 1);
	assert_int_equal(f->dev.st.bad_state, 3);
	assert_reset(f, 7, 1000);
	close(s);
	s = connect_guest_to_host(f);
	sh.flags = 0x80;
	guest_send(f, sh, NULL, 0);
	assert_int_equal(f->dev.st.bad_state, 4);
	assert_reset(f, 7, 1000);
	close(s);
}

static void test_spoofed_cid(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	struct virtio_vsock_hdr h = hdr(VIRTIO_VSOCK_OP_RST, 7, 1000, 0);
	h.src_cid = 4; /* another guest's CID */
	guest_send(f, h, NULL, 0);
	h = hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, 0);
	h.dst_cid = 5; /* not the host */
	guest_send(f, h, NULL, 0);
	assert_int_equal(f->dev.st.bad_addr, 2);
	assert_int_equal(vsock_conn_count(&f->dev), 1); /* neither touched the connection */
	close(s);
}

static void test_credit_overflow_fwd_cnt(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	/* The guest claims to have consumed bytes we never sent it. */
	struct virtio_vsock_hdr h = hdr(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 7, 1000, 0);
	h.fwd_cnt = 1;
	guest_send(f, h, NULL, 0);
	assert_int_equal(f->dev.st.bad_credit, 1);
	assert_reset(f, 7, 1000);
	close(s);
}

static void test_credit_overflow_from_odd_start(void **state)
{
	struct fx *f = *state;
	int l = host_listen(f, 1000);
	post_rx(f, 4, 4096);
	/* A REQUEST that starts its counter half-way round must not open a window for fwd_cnt. */
	struct virtio_vsock_hdr h = hdr(VIRTIO_VSOCK_OP_REQUEST, 7, 1000, 0);
	h.fwd_cnt = 0x80000000u;
	guest_send(f, h, NULL, 0);
	assert_int_equal(vsock_conn_count(&f->dev), 1);
	h = hdr(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 7, 1000, 0);
	h.fwd_cnt = 0x80000000u; /* unchanged: fine */
	guest_send(f, h, NULL, 0);
	assert_int_equal(vsock_conn_count(&f->dev), 1);
	h.fwd_cnt = 0x80001000u; /* 4 KiB consumed of the nothing we sent */
	guest_send(f, h, NULL, 0);
	assert_int_equal(f->dev.st.bad_credit, 1);
	assert_reset(f, 7, 1000);
	close(l);
}

static void test_credit_overflow_tx(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	/* The host never reads; once its socket is full everything lands in our buffer, which
	 * the guest may fill exactly to VSOCK_BUF_ALLOC and not one byte more. */
	int fd = f->dev.conns[0].fd;
	int small = 4096;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	static char chunk[VSOCK_MAX_PKT];
	memset(chunk, 'z', sizeof(chunk));
	uint32_t sent = 0;
	while (f->dev.conns[0].tx_cnt - f->dev.conns[0].fwd_cnt + sizeof(chunk) <=
	       VSOCK_BUF_ALLOC) {
		guest_send(f, hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, sizeof(chunk)), chunk,
			   sizeof(chunk));
		sent += sizeof(chunk);
		assert_int_equal(vsock_conn_count(&f->dev), 1);
		assert_true(sent < 64u << 20);
	}
	assert_true(f->dev.conns[0].buf_len <= VSOCK_BUF_ALLOC);
	uint32_t room = VSOCK_BUF_ALLOC - (f->dev.conns[0].tx_cnt - f->dev.conns[0].fwd_cnt);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_RW, 7, 1000, room + 1), chunk, room + 1);
	assert_int_equal(f->dev.st.bad_credit, 1);
	assert_reset(f, 7, 1000);
	close(s);
}

static void test_guest_credit_limits_host_data(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	struct virtio_vsock_hdr h = hdr(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 7, 1000, 0);
	h.buf_alloc = 1000;
	guest_send(f, h, NULL, 0);
	static char big[20000];
	assert_int_equal(write(s, big, sizeof(big)), (ssize_t)sizeof(big));
	vsock_host_event(&f->dev, 0, 1);
	post_rx(f, 8, 4096);
	uint32_t got = 0;
	while (take_rx(f, &h, NULL, 0))
		got += h.len;
	assert_int_equal(got, 1000); /* exactly the guest's buffer, not a byte more */
	/* The guest consumes; its update releases the next 1000. */
	h = hdr(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 7, 1000, 0);
	h.buf_alloc = 1000;
	h.fwd_cnt = 1000;
	guest_send(f, h, NULL, 0);
	got = 0;
	while (take_rx(f, &h, NULL, 0))
		got += h.len;
	assert_int_equal(got, 1000);
	close(s);
}

static void test_credit_request_answered(void **state)
{
	struct fx *f = *state;
	int s = connect_guest_to_host(f);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_CREDIT_REQUEST, 7, 1000, 0), NULL, 0);
	struct virtio_vsock_hdr h;
	assert_true(take_rx(f, &h, NULL, 0));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	assert_int_equal(h.buf_alloc, VSOCK_BUF_ALLOC);
	close(s);
}

static void test_table_full_and_rst_ring_bounded(void **state)
{
	struct fx *f = *state;
	int l = host_listen(f, 1000);
	/* No rx buffers: every RST we owe has to wait, in a ring that does not grow. */
	for (uint32_t p = 0; p < VSOCK_MAX_CONNS; p++)
		guest_send(f, hdr(VIRTIO_VSOCK_OP_REQUEST, 100 + p, 1000, 0), NULL, 0);
	assert_int_equal(vsock_conn_count(&f->dev), VSOCK_MAX_CONNS);
	for (uint32_t p = 0; p < VSOCK_RST_RING + 10; p++)
		guest_send(f, hdr(VIRTIO_VSOCK_OP_REQUEST, 5000 + p, 1000, 0), NULL, 0);
	assert_int_equal(vsock_conn_count(&f->dev), VSOCK_MAX_CONNS);
	assert_int_equal(f->dev.st.refused, VSOCK_RST_RING + 10);
	assert_int_equal(f->dev.rst_count, VSOCK_RST_RING);
	assert_int_equal(f->dev.st.rst_dropped, 10);
	/* The queued RSTs go out first once the guest gives buffers. */
	post_rx(f, 1, 4096);
	struct virtio_vsock_hdr h;
	assert_true(take_rx(f, &h, NULL, 0));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RST);
	assert_int_equal(h.dst_port, 5000);
	close(l);
}

static void test_connections_share_rx_fairly(void **state)
{
	struct fx *f = *state;
	int l = host_listen(f, 1000);
	post_rx(f, 2, 4096);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_REQUEST, 7, 1000, 0), NULL, 0);
	guest_send(f, hdr(VIRTIO_VSOCK_OP_REQUEST, 8, 1000, 0), NULL, 0);
	struct virtio_vsock_hdr h;
	assert_true(take_rx(f, &h, NULL, 0));
	assert_true(take_rx(f, &h, NULL, 0));
	int a = accept(l, NULL, NULL), b = accept(l, NULL, NULL);
	assert_true(a >= 0 && b >= 0);
	/* Both host sides have plenty to say before the guest offers any buffer. */
	static char big[32 << 10];
	assert_int_equal(write(a, big, sizeof(big)), (ssize_t)sizeof(big));
	assert_int_equal(write(b, big, sizeof(big)), (ssize_t)sizeof(big));
	vsock_host_event(&f->dev, 0, 1);
	vsock_host_event(&f->dev, 1, 1);
	post_rx(f, 6, 4096);
	uint32_t order[6], n = 0;
	while (n < 6 && take_rx(f, &h, NULL, 0)) {
		assert_int_equal(h.op, VIRTIO_VSOCK_OP_RW);
		order[n++] = h.dst_port;
	}
	assert_int_equal(n, 6);
	/* Round robin: one busy connection cannot starve the other. */
	for (unsigned i = 1; i < n; i++)
		assert_int_not_equal(order[i], order[i - 1]);
	close(a);
	close(b);
	close(l);
}

/* ---- host -> guest handshake ---- */

static int host_connect(struct fx *f, const char *line)
{
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
	vsock_host_accept(&f->dev, sp[1]);
	assert_int_equal(write(sp[0], line, strlen(line)), (ssize_t)strlen(line));
	vsock_host_event(&f->dev, 0, 1);
	return sp[0];
}

static void test_host_connect_handshake(void **state)
{
	struct fx *f = *state;
	post_rx(f, 4, 4096);
	int s = host_connect(f, "CONNECT 5000\nafter");
	struct virtio_vsock_hdr h;
	assert_true(take_rx(f, &h, NULL, 0));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_REQUEST);
	assert_int_equal(h.dst_port, 5000);
	assert_int_equal(h.dst_cid, CID);
	uint32_t hport = h.src_port;
	assert_true(hport >= 1u << 30);
	/* Nothing flows before the guest accepts. */
	assert_false(take_rx(f, &h, NULL, 0));
	struct virtio_vsock_hdr r = hdr(VIRTIO_VSOCK_OP_RESPONSE, 5000, hport, 0);
	guest_send(f, r, NULL, 0);
	char line[32] = { 0 }, want[32];
	snprintf(want, sizeof(want), "OK %u\n", hport);
	assert_int_equal(read(s, line, sizeof(line)), (ssize_t)strlen(want));
	assert_string_equal(line, want);
	/* The bytes after the CONNECT line are stream data. */
	char data[16] = { 0 };
	assert_true(take_rx(f, &h, data, sizeof(data)));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RW);
	assert_int_equal(h.len, 5);
	assert_memory_equal(data, "after", 5);
	close(s);
}

static void test_host_connect_refused_and_bad_lines(void **state)
{
	struct fx *f = *state;
	post_rx(f, 4, 4096);
	int s = host_connect(f, "CONNECT 5001\n");
	struct virtio_vsock_hdr h;
	assert_true(take_rx(f, &h, NULL, 0));
	guest_send(f, hdr(VIRTIO_VSOCK_OP_RST, 5001, h.src_port, 0), NULL, 0);
	char b[8];
	assert_int_equal(read(s, b, sizeof(b)), 0); /* no listener: closed */
	close(s);
	static const char *const bad[] = {
		"CONNECT 05\n",
		"CONNECT -1\n",
		"CONNECT 4294967296\n",
		"CONNECT\n",
		"connect 5\n",
		"CONNECT 5 \n",
		"CONNECT 123456789012345678901234567890\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = host_connect(f, bad[i]);
		/* Closed: EOF, or ECONNRESET when it left unread bytes behind. */
		ssize_t n = read(s, b, sizeof(b));
		assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
		close(s);
	}
	assert_int_equal(f->dev.st.bad_handshake, sizeof(bad) / sizeof(bad[0]));
	assert_int_equal(vsock_conn_count(&f->dev), 0);
	assert_false(take_rx(f, &h, NULL, 0)); /* the guest never heard of them */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_vmem_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_bad_indices_and_addresses, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_avail_index_runs_away, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guest_connect_and_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_without_listener_is_reset, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_short_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_len_beyond_descriptor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_len_on_control_op_and_oversize, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unknown_op_and_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ops_out_of_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spoofed_cid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credit_overflow_fwd_cnt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credit_overflow_from_odd_start, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_credit_overflow_tx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_guest_credit_limits_host_data, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_credit_request_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_full_and_rst_ring_bounded, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_connections_share_rx_fairly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_connect_handshake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_connect_refused_and_bad_lines, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
