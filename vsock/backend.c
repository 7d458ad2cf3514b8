/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/backend.c: vhost-user requests for the vsock device: features, the memory table,
 * ring set-up and tear-down, the config space (guest CID). The front end is a separate,
 * possibly compromised process too: every index and value is checked. */
#include "vsock/backend.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <string.h>
#include <unistd.h>

uint64_t backend_features(void)
{
	return (1ull << VIRTIO_F_VERSION_1) | (1ull << VHOST_USER_F_PROTOCOL_FEATURES);
}

uint64_t backend_protocol_features(void)
{
	/* CONFIG: QEMU's vhost-user-vsock-device reads the guest CID with GET_CONFIG. */
	return (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) | (1ull << VHOST_USER_PROTOCOL_F_CONFIG);
}

static struct vq *ring(struct backend *b, uint64_t idx)
{
	return idx < VSOCK_NQUEUES ? &b->dev->q[idx] : NULL;
}

static void replace_fd(int *slot, int fd)
{
	if (*slot >= 0)
		close(*slot);
	*slot = fd;
}

/* After memory or ring addresses change: resolve the ring again (stays unusable if not yet
 * possible; a later message completes it). */
static void remap(struct backend *b, struct vq *vq)
{
	if (vq->num && vq->desc_addr)
		vq_map(vq, &b->dev->mem);
}

static int set_mem_table(struct backend *b, struct vhost_user_msg *m)
{
	struct vsock_dev *d = b->dev;
	vmem_clear(&d->mem);
	for (uint32_t i = 0; i < m->p.mem.nregions; i++) {
		const struct vhost_user_mem_region *r = &m->p.mem.regions[i];
		int err = vmem_map_fd(&d->mem, m->fds[i], r->guest_phys_addr, r->userspace_addr,
				      r->memory_size, r->mmap_offset);
		if (err) {
			vmem_clear(&d->mem);
			for (unsigned q = 0; q < VSOCK_NQUEUES; q++)
				vq_map(&d->q[q], &d->mem);
			return -err;
		}
	}
	for (unsigned q = 0; q < VSOCK_NQUEUES; q++)
		remap(b, &d->q[q]);
	return 0;
}

static int set_kick(struct backend *b, struct vhost_user_msg *m)
{
	struct vq *vq = ring(b, m->p.u64 & VHOST_USER_VRING_IDX_MASK);
	if (!vq || m->nfds != 1)
		return EINVAL; /* polling mode (NOFD) is not supported */
	int fd = m->fds[0];
	m->fds[0] = -1;
	int err = vsock_dev_set_kick(b->dev, (unsigned)(vq - b->dev->q), fd);
	if (err)
		return -err;
	/* Without protocol features a ring starts when its kick fd arrives. */
	if (!(b->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		vq->enabled = true;
	remap(b, vq);
	vsock_kick(b->dev);
	return 0;
}

static int get_config(struct backend *b, int sock, const struct vhost_user_msg *m)
{
	struct virtio_vsock_config cfg = { .guest_cid = htole64(b->dev->guest_cid) };
	struct vhost_user_config out;
	memset(&out, 0, sizeof(out));
	out.offset = m->p.config.offset;
	out.size = m->p.config.size;
	out.flags = m->p.config.flags;
	/* Bytes past the 8-byte config space read as zero; vhost_user_check bounded size. */
	if (out.offset < sizeof(cfg)) {
		size_t n = sizeof(cfg) - out.offset;
		memcpy(out.region, (const uint8_t *)&cfg + out.offset, n < out.size ? n : out.size);
	}
	return vhost_user_reply(sock, m, &out, VHOST_USER_CONFIG_HDR_SIZE + out.size);
}

/* GET_VRING_BASE stops a ring: no more kicks, no more guest memory access through it. */
static int stop_ring(struct backend *b, int sock, const struct vhost_user_msg *m)
{
	struct vsock_dev *d = b->dev;
	struct vq *vq = ring(b, m->p.state.index);

	if (!vq)
		return -EINVAL; /* a GET must be answered; we cannot with a bad index */
	struct vhost_vring_state s = { .index = m->p.state.index, .num = vq->last_avail };
	vsock_dev_set_kick(d, m->p.state.index, -1);
	vq->enabled = false;
	vq->desc = NULL;
	/* A restart (SET_VRING_BASE ...) begins afresh: what the old ring's driver did wrong, or
	 * was owed a call for, does not carry over. */
	vq->broken = false;
	vq->need_call = false;
	/* The driver is resetting or the VM is going away: its sockets die with it. */
	if (vq != &d->q[VSOCK_Q_EVENT])
		vsock_dev_drop_conns(d);
	return vhost_user_reply(sock, m, &s, sizeof(s));
}

static int set_vring_num(struct backend *b, const struct vhost_user_msg *m)
{
	struct vq *vq = ring(b, m->p.state.index);

	/* 32768 fits u16; the power-of-two check keeps & (num - 1) valid. */
	if (!vq || m->p.state.num == 0 || m->p.state.num > VQ_MAX_SIZE ||
	    (m->p.state.num & (m->p.state.num - 1)))
		return EINVAL;
	vq->num = (uint16_t)m->p.state.num;
	remap(b, vq);
	return 0;
}

static int set_vring_addr(struct backend *b, const struct vhost_user_msg *m)
{
	struct vq *vq = ring(b, m->p.addr.index);

	if (!vq || m->p.addr.flags) /* no dirty logging */
		return EINVAL;
	vq->desc_addr = m->p.addr.desc_user_addr;
	vq->avail_addr = m->p.addr.avail_user_addr;
	vq->used_addr = m->p.addr.used_user_addr;
	return vq_map(vq, &b->dev->mem) < 0 ? EINVAL : 0;
}

static int set_vring_call(struct backend *b, struct vhost_user_msg *m)
{
	struct vq *vq = ring(b, m->p.u64 & VHOST_USER_VRING_IDX_MASK);

	if (!vq || m->nfds != 1)
		return EINVAL;
	replace_fd(&vq->call_fd, m->fds[0]);
	m->fds[0] = -1;
	return 0;
}

static int set_vring_enable(struct backend *b, const struct vhost_user_msg *m)
{
	struct vq *vq = ring(b, m->p.state.index);

	if (!vq || m->p.state.num > 1)
		return EINVAL;
	vq->enabled = m->p.state.num;
	if (vq->enabled)
		vsock_kick(b->dev);
	return 0;
}

/* The requests about one ring. Returns as backend_handle does; *st: the status to ack with. */
static int ring_request(struct backend *b, int sock, struct vhost_user_msg *m, int *st)
{
	struct vq *vq;

	switch (m->hdr.request) {
	case VHOST_USER_SET_VRING_NUM:
		*st = set_vring_num(b, m);
		return 0;
	case VHOST_USER_SET_VRING_ADDR:
		*st = set_vring_addr(b, m);
		return 0;
	case VHOST_USER_SET_VRING_BASE:
		vq = ring(b, m->p.state.index);
		if (!vq || m->p.state.num > UINT16_MAX)
			*st = EINVAL;
		else
			vq->last_avail = vq->used_idx = (uint16_t)m->p.state.num;
		return 0;
	case VHOST_USER_GET_VRING_BASE:
		return stop_ring(b, sock, m);
	case VHOST_USER_SET_VRING_KICK:
		*st = set_kick(b, m);
		return 0;
	case VHOST_USER_SET_VRING_CALL:
		*st = set_vring_call(b, m);
		return 0;
	case VHOST_USER_SET_VRING_ERR:
		/* We never report ring errors this way; the fd is closed with the message. */
		if (!ring(b, m->p.u64 & VHOST_USER_VRING_IDX_MASK))
			*st = EINVAL;
		return 0;
	case VHOST_USER_SET_VRING_ENABLE:
		*st = set_vring_enable(b, m);
		return 0;
	default:
		*st = EOPNOTSUPP; /* known to the protocol library, not served by this device */
		return 0;
	}
}

int backend_handle(struct backend *b, int sock, struct vhost_user_msg *m, uint64_t *status)
{
	uint64_t v;
	int st = 0, rc = 0;

	switch (m->hdr.request) {
	case VHOST_USER_GET_FEATURES:
		v = backend_features();
		return vhost_user_reply(sock, m, &v, sizeof(v));
	case VHOST_USER_SET_FEATURES:
		if (m->p.u64 & ~backend_features())
			st = EINVAL;
		else
			b->features = m->p.u64;
		break;
	case VHOST_USER_GET_PROTOCOL_FEATURES:
		v = backend_protocol_features();
		return vhost_user_reply(sock, m, &v, sizeof(v));
	case VHOST_USER_SET_PROTOCOL_FEATURES:
		if (m->p.u64 & ~backend_protocol_features())
			st = EINVAL;
		else
			b->protocol_features = m->p.u64;
		break;
	case VHOST_USER_SET_OWNER:
		break;
	case VHOST_USER_RESET_OWNER:
	case VHOST_USER_RESET_DEVICE:
		vsock_dev_reset(b->dev);
		break;
	case VHOST_USER_GET_QUEUE_NUM:
		v = VSOCK_NQUEUES;
		return vhost_user_reply(sock, m, &v, sizeof(v));
	case VHOST_USER_SET_MEM_TABLE:
		st = set_mem_table(b, m);
		break;
	case VHOST_USER_GET_CONFIG:
		return get_config(b, sock, m);
	default:
		rc = ring_request(b, sock, m, &st);
		if (rc || m->hdr.request == VHOST_USER_GET_VRING_BASE)
			return rc;
		break;
	}
	if (st)
		b->bad_requests++;
	*status = (uint64_t)st;
	return 0;
}
