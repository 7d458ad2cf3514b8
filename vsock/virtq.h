/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/virtq.h: the device side of a split virtqueue in guest memory: popping descriptor
 * chains (every index, flag, address and length checked) and publishing used entries. */
#ifndef BULKHEAD_VSOCK_VIRTQ_H
#define BULKHEAD_VSOCK_VIRTQ_H

#include "vsock/vmem.h"

#include <linux/virtio_ring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define VQ_MAX_SIZE 32768 /* the spec's limit for split rings */
#define VQ_MAX_IOV  16	  /* longest chain we accept; Linux's vsock driver uses 1 or 2 */

struct vq {
	uint16_t num;	    /* ring size, a power of two; 0 = not configured */
	uint64_t desc_addr; /* the front end's addresses (VMEM_UVA), from SET_VRING_ADDR */
	uint64_t avail_addr;
	uint64_t used_addr;
	struct vring_desc *desc; /* resolved by vq_map(); NULL while unusable */
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t last_avail; /* next avail entry we will read */
	uint16_t used_idx;   /* next used entry we will write */
	int kick_fd;	     /* eventfd the guest's notifications arrive on, or -1 */
	int call_fd;	     /* eventfd we signal the guest with, or -1 */
	bool enabled;	     /* SET_VRING_ENABLE (or implied when protocol features are off) */
	bool broken;	     /* the guest corrupted the ring itself: we stop touching it */
	bool need_call;	     /* used entries published since the last vq_notify() */
	uint64_t errors;     /* malformed chains and ring corruption seen */
};

/* One popped chain: readable buffers first, then writable ones (the spec's order). */
struct vq_chain {
	uint16_t head;
	unsigned nread, nwrite;
	uint64_t read_len, write_len; /* totals, each < 2^32 * VQ_MAX_IOV: cannot wrap */
	struct iovec iov[VQ_MAX_IOV]; /* [0, nread) readable, [nread, nread+nwrite) writable */
};

void vq_init(struct vq *vq);

/* Resolves the three ring areas through vmem_ptr() for the whole ring size. Returns 0, or
 * -EINVAL for a bad size, misaligned or unmapped rings (the queue then stays unusable). */
int vq_map(struct vq *vq, const struct vmem *m);

/* Usable: mapped, enabled, not broken. */
bool vq_ready(const struct vq *vq);

/*
 * Pops the next available chain. Returns 1 with *c filled, 0 when the ring is empty or not
 * ready, or a negative errno for a malformed chain (index out of range, a loop, indirect
 * descriptors, a readable buffer after a writable one, too many buffers, an address outside
 * guest memory). A malformed chain has already been returned to the guest as used with
 * length 0 and counted in vq->errors; the caller just moves on. An avail index that runs more
 * than num ahead of us marks the ring broken for good.
 */
int vq_pop(struct vq *vq, const struct vmem *m, struct vq_chain *c);

/* Puts back the last popped chain (no room for what we wanted to put in it). */
void vq_unpop(struct vq *vq);

/* Publishes head as used with len bytes written. */
void vq_push(struct vq *vq, uint16_t head, uint32_t len);

/* Signals call_fd once if anything was pushed since the last call and the guest did not ask
 * us not to (VRING_AVAIL_F_NO_INTERRUPT; EVENT_IDX is not offered). */
void vq_notify(struct vq *vq);

/* Whether more chains are available (for "is there room in rx?"). */
bool vq_has_avail(const struct vq *vq);

/* Copies out of the chain's readable bytes at offset off; returns bytes copied. */
size_t vq_chain_read(const struct vq_chain *c, size_t off, void *dst, size_t len);
/* Copies into the chain's writable bytes at offset off; returns bytes copied. */
size_t vq_chain_write(const struct vq_chain *c, size_t off, const void *src, size_t len);
/* Fills out[] with the writable (or readable) iovecs from offset off on, up to len bytes;
 * returns how many iovecs. */
unsigned vq_chain_iov(const struct vq_chain *c, bool writable, size_t off, size_t len,
		      struct iovec *out, unsigned max);

#endif
