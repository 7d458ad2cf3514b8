/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/vhost_user_snap.c: vhost-user devices in a snapshot — their rings stopped in the
 * old back ends and started where they stood in the new ones, and a restored vsock guest
 * told that its transport was reset (see vhost_user_dev.h). */
#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/virtio/vhost_user_dev_internal.h"

#include "vmm/log.h"

#include <errno.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_ring.h>
#include <linux/virtio_vsock.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

int virtio_devs_save(struct virtio_devs *d, unsigned i, struct vhost_user_dev_state *s)
{
	struct vhost_user_dev *v = d->devs[i];

	memset(s, 0, sizeof(*s));
	s->device_id = v->device_id;
	s->nqueues = v->mmio.cfg.nqueues;
	memcpy(s->config, v->config, sizeof(s->config));
	virtio_mmio_save(&v->mmio, &s->mmio);
	s->driver_features = v->driver_features;
	s->driver_ok = v->driver_ok;
	s->event_avail = v->event_avail;
	for (unsigned q = 0; q < v->backend_queues; q++) {
		uint32_t base = 0;
		if (!v->started[q])
			continue;
		/* The back end stops touching the ring and says where it stood. */
		if (vu_front_stop_ring(&v->front, q, &base)) {
			vmm_log("snapshot: vhost-user back end %s: %s", v->name, v->front.why);
			return v->front.err ? v->front.err : -EIO;
		}
		v->started[q] = false;
		v->paused |= 1u << q;
		v->base[q] = (uint16_t)base;
		s->started |= 1u << q;
		s->base[q] = base;
	}
	return 0;
}

int virtio_devs_resume(struct virtio_devs *d)
{
	for (unsigned i = 0; i < d->n; i++) {
		struct vhost_user_dev *v = d->devs[i];
		for (unsigned q = 0; q < v->backend_queues; q++) {
			if (!(v->paused & (1u << q)))
				continue;
			v->paused &= ~(1u << q);
			int err = vhost_user_dev_start(v, &v->mmio, q);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Tells a restored guest's vsock driver that its transport was reset: one event
 * (VIRTIO_VSOCK_EVENT_TRANSPORT_RESET) in the next buffer the driver gave the event queue,
 * the used ring advanced, the interrupt raised. Every address and index is the guest's, so
 * each is checked; a driver that gave no buffer gets no event (said in one line). */
static int vsock_event_reset(struct vhost_user_dev *v)
{
	struct virtio_mmio *t = &v->mmio;
	const struct virtio_mmio_queue *q = &t->q[2];
	const struct gmem *gm = &t->vm->mem;
	struct virtio_vsock_event ev = { .id = VIRTIO_VSOCK_EVENT_TRANSPORT_RESET };

	if (!q->ready || !v->driver_ok)
		return 0; /* no driver yet: no connection either */
	struct vring_avail *avail = gmem_ptr(gm, q->driver, 4 + 2ull * q->num);
	struct vring_used *used = gmem_ptr(gm, q->device, 4 + 8ull * q->num);
	struct vring_desc *desc = gmem_ptr(gm, q->desc, 16ull * q->num);
	if (!avail || !used || !desc)
		return -EFAULT; /* checked at restore: cannot happen */
	uint16_t avail_idx = __atomic_load_n(&avail->idx, __ATOMIC_ACQUIRE);
	if (avail_idx == (uint16_t)v->event_avail) {
		vmm_log("restore: the guest's vsock driver has no event buffer; its connections "
			"are not told of the reset");
		return 0;
	}
	uint16_t head = avail->ring[v->event_avail % q->num];
	void *buf = head < q->num && (desc[head].flags & VRING_DESC_F_WRITE) &&
				    desc[head].len >= sizeof(ev)
			    ? gmem_ptr(gm, desc[head].addr, sizeof(ev))
			    : NULL;
	v->event_avail = (uint16_t)(v->event_avail + 1);
	uint16_t used_idx = used->idx;
	used->ring[used_idx % q->num] =
		(struct vring_used_elem){ .id = head, .len = buf ? sizeof(ev) : 0 };
	if (buf)
		memcpy(buf, &ev, sizeof(ev));
	__atomic_store_n(&used->idx, (uint16_t)(used_idx + 1), __ATOMIC_RELEASE);
	if (eventfd_write(t->irq_fd, 1) < 0)
		return -errno;
	return 0;
}

/* A ring's position is a 16-bit index (virtio 1.2, 2.7.6): a wider saved one is damage. */
static bool bases_out_of_range(const struct vhost_user_dev_state *s, unsigned nqueues)
{
	for (unsigned q = 0; q < nqueues && q < VIRTIO_MMIO_MAX_QUEUES; q++)
		if (s->base[q] > UINT16_MAX)
			return true;
	return false;
}

int virtio_devs_restore(struct virtio_devs *d, unsigned i, const struct vhost_user_dev_state *s)
{
	struct vhost_user_dev *v = d->devs[i];
	char what[320];
	int err;

	const char *bad = NULL;
	if (s->device_id != v->device_id || s->nqueues != v->mmio.cfg.nqueues ||
	    memcmp(s->config, v->config, sizeof(s->config)) != 0)
		bad = "is not the snapshot's (another type, tag or CID); give the devices the "
		      "saved "
		      "VM had, in its order";
	else if (s->driver_ok > 1 || s->pad || (s->started & ~((1u << v->backend_queues) - 1)) ||
		 bases_out_of_range(s, v->backend_queues) ||
		 virtio_mmio_restore(&v->mmio, &s->mmio))
		bad = "has a malformed saved state";
	if (bad) {
		snprintf(what, sizeof(what), "--restore-fd: virtio device %u (%s) %s", i, v->name,
			 bad);
		vmm_log_setup(what, 0, "nothing was started");
		return -EBADMSG;
	}
	v->driver_features = s->driver_features;
	v->event_avail = s->event_avail;
	if (s->driver_ok && (err = vu_front_set_features(&v->front, v->driver_features)))
		goto fail;
	v->driver_ok = s->driver_ok;
	for (unsigned q = 0; q < v->backend_queues; q++) {
		if (!(s->started & (1u << q)))
			continue;
		if (!v->mmio.q[q].ready || !v->driver_ok) {
			err = -EINVAL;
			snprintf(v->front.why, sizeof(v->front.why),
				 "ring %u ran but is not ready in the saved transport", q);
			goto fail;
		}
		v->base[q] = (uint16_t)s->base[q];
		if ((err = vu_front_start_ring(&v->front, &d->vm->mem, q, v->mmio.q[q].num,
					       v->base[q], v->mmio.q[q].desc, v->mmio.q[q].driver,
					       v->mmio.q[q].device, v->mmio.q[q].kick_fd,
					       v->mmio.irq_fd)))
			goto fail;
		v->started[q] = true;
		v->base[q] = 0;
		/* A kick the guest gave just before the save may not have been seen by the old
		 * back end (GET_VRING_BASE stops it between two looks at the ring): one more makes
		 * the new one look; a back end that finds nothing new does nothing. */
		if (eventfd_write(v->mmio.q[q].kick_fd, 1) < 0) {
			err = -errno;
			snprintf(v->front.why, sizeof(v->front.why), "kicking ring %u failed", q);
			goto fail;
		}
	}
	if (v->device_id == VIRTIO_ID_VSOCK && (err = vsock_event_reset(v))) {
		snprintf(v->front.why, sizeof(v->front.why), "the transport reset event failed");
		goto fail;
	}
	return 0;
fail:
	snprintf(what, sizeof(what), "--restore-fd: vhost-user back end %s: %s", v->name,
		 v->front.why);
	vmm_log_setup(what, 0, "nothing was started");
	return err;
}
