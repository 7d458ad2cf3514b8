/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/mmio_state.c: a transport's registers saved for a snapshot and set back from one,
 * checked as the driver's own writes are (see virtio_mmio_restore in mmio.h). */
#include "vmm/virtio/mmio.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <string.h>

void virtio_mmio_save(struct virtio_mmio *t, struct virtio_mmio_state *s)
{
	pthread_mutex_lock(&t->lock);
	memset(s, 0, sizeof(*s));
	s->driver_features = t->driver_features;
	s->device_features_sel = t->device_features_sel;
	s->driver_features_sel = t->driver_features_sel;
	s->queue_sel = t->queue_sel;
	s->status = t->status;
	s->isr = t->isr;
	s->config_generation = t->config_generation;
	for (unsigned i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		s->q[i].num = t->q[i].num;
		s->q[i].ready = t->q[i].ready;
		s->q[i].desc = t->q[i].desc;
		s->q[i].driver = t->q[i].driver;
		s->q[i].device = t->q[i].device;
	}
	pthread_mutex_unlock(&t->lock);
}

int virtio_mmio_restore(struct virtio_mmio *t, const struct virtio_mmio_state *s)
{
	const uint32_t bits = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			      VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK |
			      VIRTIO_CONFIG_S_FAILED | VIRTIO_CONFIG_S_NEEDS_RESET;
	uint32_t st = s->status;

	if ((st & ~bits) ||
	    ((st & VIRTIO_CONFIG_S_DRIVER) && !(st & VIRTIO_CONFIG_S_ACKNOWLEDGE)) ||
	    ((st & VIRTIO_CONFIG_S_FEATURES_OK) && !(st & VIRTIO_CONFIG_S_DRIVER)) ||
	    ((st & VIRTIO_CONFIG_S_DRIVER_OK) && !(st & VIRTIO_CONFIG_S_FEATURES_OK)) ||
	    /* The device sets NEEDS_RESET only on a queue or DRIVER_OK it could not take, and
	     * raises an interrupt only once the driver is up. */
	    ((st & VIRTIO_CONFIG_S_NEEDS_RESET) && !(st & VIRTIO_CONFIG_S_FEATURES_OK)) ||
	    (s->isr && !(st & VIRTIO_CONFIG_S_DRIVER_OK)) ||
	    ((st & VIRTIO_CONFIG_S_FEATURES_OK) &&
	     ((s->driver_features & ~virtio_mmio_offered(t)) ||
	      !(s->driver_features & (1ull << VIRTIO_F_VERSION_1)))) ||
	    s->isr > (VIRTIO_MMIO_INT_VRING | VIRTIO_MMIO_INT_CONFIG) || s->pad)
		return -EINVAL;
	for (unsigned i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		struct virtio_mmio_queue q = { .num = s->q[i].num,
					       .desc = s->q[i].desc,
					       .driver = s->q[i].driver,
					       .device = s->q[i].device };
		/* A queue the device does not have is never written: all zero. */
		if (i >= t->cfg.nqueues && (q.num || q.desc || q.driver || q.device))
			return -EINVAL;
		if (s->q[i].ready > 1 ||
		    (s->q[i].ready && (i >= t->cfg.nqueues || !(st & VIRTIO_CONFIG_S_FEATURES_OK) ||
				       !virtio_mmio_queue_valid(t, &q))))
			return -EINVAL;
	}
	pthread_mutex_lock(&t->lock);
	t->driver_features = s->driver_features;
	t->device_features_sel = s->device_features_sel;
	t->driver_features_sel = s->driver_features_sel;
	t->queue_sel = s->queue_sel;
	t->status = st;
	t->isr = s->isr;
	t->config_generation = s->config_generation;
	for (unsigned i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		t->q[i].num = s->q[i].num;
		t->q[i].ready = s->q[i].ready;
		t->q[i].desc = s->q[i].desc;
		t->q[i].driver = s->q[i].driver;
		t->q[i].device = s->q[i].device;
	}
	pthread_mutex_unlock(&t->lock);
	return 0;
}
