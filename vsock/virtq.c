/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/virtq.c: split-virtqueue processing for the back end. The rings live in memory the
 * guest can rewrite at any moment, so every shared field is read once into a local and checked
 * there; only vmem_ptr() turns guest addresses into pointers. */
#include "vsock/virtq.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void vq_init(struct vq *vq)
{
	memset(vq, 0, sizeof(*vq));
	vq->kick_fd = -1;
	vq->call_fd = -1;
}

int vq_map(struct vq *vq, const struct vmem *m)
{
	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
	uint64_t n = vq->num;
	if (n == 0 || n > VQ_MAX_SIZE || (n & (n - 1)))
		return -EINVAL;
	if ((vq->desc_addr & 15) || (vq->avail_addr & 1) || (vq->used_addr & 3))
		return -EINVAL;
	/* EVENT_IDX is never negotiated, so the trailing event fields are not ours to touch. */
	void *d = vmem_ptr(m, VMEM_UVA, vq->desc_addr, 16 * n);
	void *a = vmem_ptr(m, VMEM_UVA, vq->avail_addr, 4 + 2 * n);
	void *u = vmem_ptr(m, VMEM_UVA, vq->used_addr, 4 + 8 * n);
	if (!d || !a || !u)
		return -EINVAL;
	vq->desc = d;
	vq->avail = a;
	vq->used = u;
	return 0;
}

bool vq_ready(const struct vq *vq)
{
	return vq->desc && vq->enabled && !vq->broken;
}

static uint16_t load16(const void *p)
{
	return __atomic_load_n((const uint16_t *)p, __ATOMIC_ACQUIRE);
}

bool vq_has_avail(const struct vq *vq)
{
	return vq_ready(vq) && load16(&vq->avail->idx) != vq->last_avail;
}

/* Walks the chain at head into c. Returns 0 or -errno; never trusts a descriptor twice. */
static int walk(const struct vq *vq, const struct vmem *m, uint16_t head, struct vq_chain *c)
{
	memset(c, 0, sizeof(*c));
	c->head = head;
	uint16_t idx = head;
	/* A chain longer than the ring must revisit a descriptor: that is the loop check. */
	for (unsigned steps = 0;; steps++) {
		if (idx >= vq->num || steps >= vq->num)
			return -ELOOP;
		struct vring_desc d;
		memcpy(&d, &vq->desc[idx], sizeof(d));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (d.flags & VRING_DESC_F_INDIRECT)
			return -EINVAL; /* VIRTIO_RING_F_INDIRECT_DESC is not offered */
		bool wr = d.flags & VRING_DESC_F_WRITE;
		if (!wr && c->nwrite)
			return -EINVAL;
		if (d.len) {
			if (c->nread + c->nwrite >= VQ_MAX_IOV)
				return -E2BIG;
			void *p = vmem_ptr(m, VMEM_GPA, d.addr, d.len);
			if (!p)
				return -EFAULT;
			c->iov[c->nread + c->nwrite] = (struct iovec){ p, d.len };
			if (wr) {
				c->nwrite++;
				c->write_len += d.len;
			} else {
				c->nread++;
				c->read_len += d.len;
			}
		}
		if (!(d.flags & VRING_DESC_F_NEXT))
			return 0;
		idx = d.next;
	}
}

int vq_pop(struct vq *vq, const struct vmem *m, struct vq_chain *c)
{
	if (!vq_ready(vq))
		return 0;
	uint16_t avail_idx = load16(&vq->avail->idx);
	if (avail_idx == vq->last_avail)
		return 0;
	if ((uint16_t)(avail_idx - vq->last_avail) > vq->num) {
		/* The guest claims more buffers than the ring holds: nothing in it can be trusted.
		 */
		vq->broken = true;
		vq->errors++;
		return -EOVERFLOW;
	}
	uint16_t head = load16(&vq->avail->ring[vq->last_avail & (vq->num - 1)]);
	vq->last_avail++;
	if (head >= vq->num) {
		/* Not even a head we could name in the used ring; skip the slot. */
		vq->errors++;
		return -ERANGE;
	}
	int err = walk(vq, m, head, c);
	if (err) {
		vq->errors++;
		vq_push(vq, head, 0);
		return err;
	}
	return 1;
}

void vq_unpop(struct vq *vq)
{
	vq->last_avail--;
}

void vq_push(struct vq *vq, uint16_t head, uint32_t len)
{
	struct vring_used_elem *e = &vq->used->ring[vq->used_idx & (vq->num - 1)];
	e->id = head;
	e->len = len;
	vq->used_idx++;
	/* The entry must be visible before the index that publishes it. */
	__atomic_store_n(&vq->used->idx, vq->used_idx, __ATOMIC_RELEASE);
	vq->need_call = true;
}

void vq_notify(struct vq *vq)
{
	if (!vq->need_call || !vq_ready(vq))
		return;
	vq->need_call = false;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (load16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT)
		return;
	if (vq->call_fd >= 0) {
		uint64_t one = 1;
		/* EAGAIN means the counter is already non-zero: the guest will be woken anyway. */
		if (write(vq->call_fd, &one, sizeof(one)) < 0) {
		}
	}
}

static size_t chain_copy(const struct vq_chain *c, bool writable, size_t off, void *buf, size_t len)
{
	unsigned first = writable ? c->nread : 0, n = writable ? c->nwrite : c->nread;
	size_t done = 0;
	for (unsigned i = first; i < first + n && done < len; i++) {
		size_t l = c->iov[i].iov_len;
		if (off >= l) {
			off -= l;
			continue;
		}
		size_t k = l - off < len - done ? l - off : len - done;
		char *g = (char *)c->iov[i].iov_base + off;
		if (writable)
			memcpy(g, (const char *)buf + done, k);
		else
			memcpy((char *)buf + done, g, k);
		done += k;
		off = 0;
	}
	return done;
}

size_t vq_chain_read(const struct vq_chain *c, size_t off, void *dst, size_t len)
{
	return chain_copy(c, false, off, dst, len);
}

size_t vq_chain_write(const struct vq_chain *c, size_t off, const void *src, size_t len)
{
	return chain_copy(c, true, off, (void *)(uintptr_t)src, len);
}

unsigned vq_chain_iov(const struct vq_chain *c, bool writable, size_t off, size_t len,
		      struct iovec *out, unsigned max)
{
	unsigned first = writable ? c->nread : 0, n = writable ? c->nwrite : c->nread, k = 0;
	for (unsigned i = first; i < first + n && len && k < max; i++) {
		size_t l = c->iov[i].iov_len;
		if (off >= l) {
			off -= l;
			continue;
		}
		size_t take = l - off < len ? l - off : len;
		out[k++] = (struct iovec){ (char *)c->iov[i].iov_base + off, take };
		len -= take;
		off = 0;
	}
	return k;
}
