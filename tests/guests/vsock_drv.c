/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/vsock_drv.c: the driver side of virtio-vsock over virtio-mmio, just enough for
 * the ring restart scenarios (see vsock_drv.h): one connection at a time, polled rings (no
 * interrupts), every value the device writes checked before use. Freestanding: no libc, so
 * copies and fills are plain loops and atomics are compiler built-ins. */
#include "tests/guests/vsock_drv.h"

#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>
#include <linux/virtio_vsock.h>

#define VD_MAGIC	 0x74726976u /* "virt" */
#define VD_HDR		 ((uint32_t)sizeof(struct virtio_vsock_hdr))
#define VD_HOST_CID	 2
#define VD_Q_RX		 0
#define VD_Q_TX		 1
#define VD_Q_EVENT	 2
#define VD_RING_SPAN	 0x3000u  /* desc, avail, used: one page each */
#define VD_RXBUF_OFF	 0x10000u /* VD_QSIZE rx buffers */
#define VD_TXBUF_OFF	 0x20000u /* the one tx packet in flight */
#define VD_FIRST_PORT	 40000u
#define VD_STREAM_ENOUGH 16384u /* bytes of the stream before the reset */

_Static_assert(VD_RXBUF_OFF + VD_QSIZE * VD_RX_BUF <= VD_TXBUF_OFF, "rx buffers fit");
_Static_assert(VD_TXBUF_OFF + VD_HDR + VD_MSG_MAX <= VD_AREA_SIZE, "tx buffer fits");

static void vd_fill(void *p, uint8_t c, uint64_t n)
{
	volatile uint8_t *d = p; /* volatile: the compiler must not turn this into memset() */
	for (uint64_t i = 0; i < n; i++)
		d[i] = c;
}

static void vd_copy(void *dst, const void *src, uint64_t n)
{
	volatile uint8_t *d = dst;
	const volatile uint8_t *s = src;
	for (uint64_t i = 0; i < n; i++)
		d[i] = s[i];
}

static uint32_t rd(struct vd *v, uint32_t off)
{
	return vd_plat_read32(v->base + off);
}

static void wr(struct vd *v, uint32_t off, uint32_t val)
{
	vd_plat_write32(v->base + off, val);
}

/* The byte at offset k of the stream port's pattern (tests/tools/vsock_restart_probe.c). */
static uint8_t vd_pattern(uint32_t k)
{
	return (uint8_t)(k * 7u + 3u);
}

int vd_probe(struct vd *v, uint64_t base, unsigned windows, uint64_t area)
{
	vd_fill(v, 0, sizeof(*v));
	v->area = area;
	v->next_port = VD_FIRST_PORT;
	for (unsigned i = 0; i < windows; i++) {
		v->base = base + (uint64_t)i * 0x1000;
		if (rd(v, VIRTIO_MMIO_MAGIC_VALUE) == VD_MAGIC && rd(v, VIRTIO_MMIO_VERSION) == 2 &&
		    rd(v, VIRTIO_MMIO_DEVICE_ID) == VIRTIO_ID_VSOCK)
			return 0;
	}
	return VD_E_NODEV;
}

static uint64_t vd_ring_gpa(struct vd *v, unsigned q, unsigned part)
{
	return v->area + q * VD_RING_SPAN + part * 0x1000u;
}

/* A fresh ring for queue q (zeroed, indices 0), made ready. */
static int vd_setup_queue(struct vd *v, unsigned q)
{
	struct vd_ring *r = &v->q[q];
	r->desc = vd_ring_gpa(v, q, 0);
	r->avail = vd_ring_gpa(v, q, 1);
	r->used = vd_ring_gpa(v, q, 2);
	r->next_avail = r->used_seen = 0;
	vd_fill(vd_plat_ptr(v->area + q * VD_RING_SPAN, VD_RING_SPAN), 0, VD_RING_SPAN);
	wr(v, VIRTIO_MMIO_QUEUE_SEL, q);
	if (rd(v, VIRTIO_MMIO_QUEUE_READY) != 0 || rd(v, VIRTIO_MMIO_QUEUE_NUM_MAX) < VD_QSIZE)
		return VD_E_QUEUE;
	wr(v, VIRTIO_MMIO_QUEUE_NUM, VD_QSIZE);
	wr(v, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)r->desc);
	wr(v, VIRTIO_MMIO_QUEUE_DESC_HIGH, (uint32_t)(r->desc >> 32));
	wr(v, VIRTIO_MMIO_QUEUE_AVAIL_LOW, (uint32_t)r->avail);
	wr(v, VIRTIO_MMIO_QUEUE_AVAIL_HIGH, (uint32_t)(r->avail >> 32));
	wr(v, VIRTIO_MMIO_QUEUE_USED_LOW, (uint32_t)r->used);
	wr(v, VIRTIO_MMIO_QUEUE_USED_HIGH, (uint32_t)(r->used >> 32));
	wr(v, VIRTIO_MMIO_QUEUE_READY, 1);
	return rd(v, VIRTIO_MMIO_QUEUE_READY) == 1 ? 0 : VD_E_QUEUE;
}

static void vd_publish(struct vd_ring *r)
{
	struct vring_avail *a = vd_plat_ptr(r->avail, 4 + 2 * VD_QSIZE);
	__atomic_store_n(&a->idx, r->next_avail, __ATOMIC_RELEASE);
}

/* Every rx buffer back in the rx ring (a fresh ring), then a notify. */
static void vd_post_rx(struct vd *v)
{
	struct vd_ring *r = &v->q[VD_Q_RX];
	struct vring_desc *d = vd_plat_ptr(r->desc, 16 * VD_QSIZE);
	struct vring_avail *a = vd_plat_ptr(r->avail, 4 + 2 * VD_QSIZE);
	for (uint16_t i = 0; i < VD_QSIZE; i++) {
		d[i].addr = v->area + VD_RXBUF_OFF + (uint64_t)i * VD_RX_BUF;
		d[i].len = VD_RX_BUF;
		d[i].flags = VRING_DESC_F_WRITE;
		d[i].next = 0;
		a->ring[r->next_avail++ % VD_QSIZE] = i;
	}
	vd_publish(r);
	vd_plat_notify(v->base, VD_Q_RX);
}

static uint32_t vd_status_ok(struct vd *v, uint32_t want)
{
	uint32_t s = rd(v, VIRTIO_MMIO_STATUS);
	return s == want && !(s & VIRTIO_CONFIG_S_NEEDS_RESET);
}

void vd_reset(struct vd *v)
{
	wr(v, VIRTIO_MMIO_STATUS, 0);
	v->connected = false;
}

int vd_init(struct vd *v)
{
	uint32_t s = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;
	int err;

	vd_reset(v);
	if (rd(v, VIRTIO_MMIO_STATUS) != 0)
		return VD_E_STATUS;
	wr(v, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(v, VIRTIO_MMIO_STATUS, s);
	wr(v, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	if (!(rd(v, VIRTIO_MMIO_DEVICE_FEATURES) & 1)) /* VERSION_1 (bit 32) */
		return VD_E_FEATURES;
	wr(v, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(v, VIRTIO_MMIO_DRIVER_FEATURES, 1);
	wr(v, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(v, VIRTIO_MMIO_DRIVER_FEATURES, 0);
	s |= VIRTIO_CONFIG_S_FEATURES_OK;
	wr(v, VIRTIO_MMIO_STATUS, s);
	if (!vd_status_ok(v, s))
		return VD_E_FEATURES;
	uint64_t cid = rd(v, VIRTIO_MMIO_CONFIG) | (uint64_t)rd(v, VIRTIO_MMIO_CONFIG + 4) << 32;
	if (cid < 3 || cid >= 0xffffffffu || (v->cid && cid != v->cid))
		return VD_E_CID;
	v->cid = cid;
	for (unsigned q = 0; q < 3; q++)
		if ((err = vd_setup_queue(v, q)))
			return err;
	s |= VIRTIO_CONFIG_S_DRIVER_OK;
	wr(v, VIRTIO_MMIO_STATUS, s);
	if (!vd_status_ok(v, s))
		return VD_E_STATUS;
	vd_post_rx(v);
	return 0;
}

/* Sends one packet on the current connection and waits until the device consumed it. */
static int vd_send(struct vd *v, uint16_t op, const void *data, uint32_t len)
{
	struct vd_ring *r = &v->q[VD_Q_TX];
	uint64_t buf = v->area + VD_TXBUF_OFF;
	struct virtio_vsock_hdr *h = vd_plat_ptr(buf, VD_HDR + VD_MSG_MAX);
	struct vring_desc *d = vd_plat_ptr(r->desc, 16 * VD_QSIZE);
	struct vring_avail *a = vd_plat_ptr(r->avail, 4 + 2 * VD_QSIZE);
	struct vring_used *u = vd_plat_ptr(r->used, 4 + 8 * VD_QSIZE);

	if (len > VD_MSG_MAX)
		return VD_E_TX;
	vd_fill(h, 0, VD_HDR);
	h->src_cid = v->cid;
	h->dst_cid = VD_HOST_CID;
	h->src_port = v->lport;
	h->dst_port = v->rport;
	h->len = len;
	h->type = VIRTIO_VSOCK_TYPE_STREAM;
	h->op = op;
	h->buf_alloc = VD_BUF_ALLOC;
	h->fwd_cnt = v->fwd_cnt;
	vd_copy((uint8_t *)h + VD_HDR, data, len);
	d[0].addr = buf;
	d[0].len = VD_HDR + len;
	d[0].flags = 0;
	d[0].next = 0;
	a->ring[r->next_avail++ % VD_QSIZE] = 0;
	vd_publish(r);
	vd_plat_notify(v->base, VD_Q_TX);
	uint64_t t0 = vd_plat_now();
	while (__atomic_load_n(&u->idx, __ATOMIC_ACQUIRE) != r->next_avail) {
		if (vd_plat_now() - t0 > vd_plat_timeout())
			return VD_E_TX;
		vd_plat_relax();
	}
	r->used_seen = r->next_avail;
	return 0;
}

/* One received packet (already bounded to the buffer). */
static void vd_handle(struct vd *v, const struct virtio_vsock_hdr *h, const uint8_t *data,
		      uint32_t n)
{
	if (h->src_cid != VD_HOST_CID || h->dst_cid != v->cid || h->dst_port != v->lport ||
	    h->src_port != v->rport)
		return; /* an earlier connection's late packet */
	switch (h->op) {
	case VIRTIO_VSOCK_OP_RESPONSE:
		v->connected = true;
		break;
	case VIRTIO_VSOCK_OP_RST:
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		v->connected = false;
		v->reset_seen = true;
		break;
	case VIRTIO_VSOCK_OP_RW:
		if (v->rport == VD_PORT_STREAM) {
			for (uint32_t i = 0; i < n; i++)
				if (data[i] != vd_pattern(v->stream_bytes + i))
					v->stream_bad = true;
			v->stream_bytes += n;
		} else {
			uint32_t room = VD_MSG_MAX - v->in_len;
			vd_copy(v->in + v->in_len, data, n < room ? n : room);
			v->in_len += n < room ? n : room;
		}
		v->fwd_cnt += n;
		break;
	default:
		break; /* credit updates: our messages are far below the host's buffer */
	}
}

/* Takes every used rx buffer, handles it and gives it back. 0 or VD_E_RING. */
static int vd_poll(struct vd *v)
{
	struct vd_ring *r = &v->q[VD_Q_RX];
	struct vring_used *u = vd_plat_ptr(r->used, 4 + 8 * VD_QSIZE);
	struct vring_avail *a = vd_plat_ptr(r->avail, 4 + 2 * VD_QSIZE);
	uint16_t idx = __atomic_load_n(&u->idx, __ATOMIC_ACQUIRE);
	bool any = false;

	if ((uint16_t)(idx - r->used_seen) > VD_QSIZE)
		return VD_E_RING;
	while (r->used_seen != idx) {
		struct vring_used_elem e = u->ring[r->used_seen % VD_QSIZE];
		if (e.id >= VD_QSIZE || e.len < VD_HDR || e.len > VD_RX_BUF)
			return VD_E_RING;
		const uint8_t *buf =
			vd_plat_ptr(v->area + VD_RXBUF_OFF + e.id * VD_RX_BUF, VD_RX_BUF);
		const struct virtio_vsock_hdr *h = (const void *)buf;
		if (h->len > e.len - VD_HDR)
			return VD_E_RING;
		vd_handle(v, h, buf + VD_HDR, h->len);
		a->ring[r->next_avail++ % VD_QSIZE] = (uint16_t)e.id;
		r->used_seen++;
		any = true;
	}
	if (any) {
		vd_publish(r);
		vd_plat_notify(v->base, VD_Q_RX);
	}
	return 0;
}

/* Polls the rx ring until cond holds; err when the wait runs out or the ring is broken. */
#define VD_WAIT(v, cond, err)                                                                      \
	do {                                                                                       \
		uint64_t t0_ = vd_plat_now();                                                      \
		for (;;) {                                                                         \
			if (vd_poll(v))                                                            \
				return VD_E_RING;                                                  \
			if (cond)                                                                  \
				break;                                                             \
			if (vd_plat_now() - t0_ > vd_plat_timeout())                               \
				return (err);                                                      \
			vd_plat_relax();                                                           \
		}                                                                                  \
	} while (0)

static int vd_connect(struct vd *v, uint32_t port)
{
	v->lport = v->next_port++;
	v->rport = port;
	v->connected = v->reset_seen = false;
	v->fwd_cnt = v->in_len = v->stream_bytes = 0;
	v->stream_bad = false;
	int err = vd_send(v, VIRTIO_VSOCK_OP_REQUEST, 0, 0);
	if (err)
		return err;
	VD_WAIT(v, v->connected || v->reset_seen, VD_E_CONNECT);
	return v->connected ? 0 : VD_E_CONNECT;
}

int vd_echo(struct vd *v, const char *msg)
{
	uint32_t n = 0;
	while (msg[n] && n < VD_MSG_MAX)
		n++;
	int err = vd_connect(v, VD_PORT_ECHO);
	if (!err)
		err = vd_send(v, VIRTIO_VSOCK_OP_RW, msg, n);
	if (err)
		return err;
	VD_WAIT(v, v->in_len >= n || v->reset_seen, VD_E_ECHO);
	for (uint32_t i = 0; i < n; i++)
		if (i >= v->in_len || v->in[i] != (uint8_t)msg[i])
			return VD_E_ECHO;
	return vd_send(v, VIRTIO_VSOCK_OP_RST, 0, 0); /* done with it */
}

int vd_scenario_basic(struct vd *v)
{
	int err = vd_init(v);
	return err ? err : vd_echo(v, "ping before any restart");
}

int vd_scenario_toggle(struct vd *v)
{
	const uint32_t running = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
				 VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK;
	int err;
	/* Both of the back end's queues, one after the other, each onto a fresh ring. */
	for (unsigned q = VD_Q_RX; q <= VD_Q_TX; q++) {
		wr(v, VIRTIO_MMIO_QUEUE_SEL, q);
		wr(v, VIRTIO_MMIO_QUEUE_READY, 0);
		if ((err = vd_setup_queue(v, q)))
			return err;
		if (!vd_status_ok(v, running))
			return VD_E_STATUS;
	}
	vd_post_rx(v);
	return vd_echo(v, "ping after QueueReady 0 -> 1");
}

int vd_scenario_reset(struct vd *v)
{
	vd_reset(v);
	int err = vd_init(v);
	return err ? err : vd_echo(v, "ping after a reset");
}

int vd_scenario_reset_busy(struct vd *v)
{
	int err = vd_connect(v, VD_PORT_STREAM);
	if (err)
		return err;
	VD_WAIT(v, v->stream_bytes >= VD_STREAM_ENOUGH || v->reset_seen, VD_E_STREAM);
	if (v->stream_bad || v->reset_seen)
		return VD_E_STREAM;
	/* More credit, so the back end is moving data at the very moment of the reset. */
	if ((err = vd_send(v, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0, 0)))
		return err;
	vd_reset(v);
	/* Notifies on the stopped queues: KVM signals the kick eventfds all the same. */
	for (uint32_t q = VD_Q_RX; q <= VD_Q_EVENT; q++)
		vd_plat_notify(v->base, q);
	vd_plat_between();
	err = vd_init(v);
	return err ? err : vd_echo(v, "ping after a reset in mid-stream");
}
