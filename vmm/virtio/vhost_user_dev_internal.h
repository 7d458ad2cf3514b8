/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/vhost_user_dev_internal.h: one vhost-user device's state, shared by the files that
 * make up vhost_user_dev.h's API (vhost_user_dev.c: set-up, the driver's requests, the
 * watcher; vhost_user_snap.c: snapshots). Not for anyone else. */
#ifndef BULKHEAD_VMM_VIRTIO_VHOST_USER_DEV_INTERNAL_H
#define BULKHEAD_VMM_VIRTIO_VHOST_USER_DEV_INTERNAL_H

#include "vmm/virtio/mmio.h"
#include "vmm/virtio/vu_front.h"

#include <stdbool.h>
#include <stdint.h>

#define VHOST_USER_DEV_CONFIG_MAX 64

struct virtio_devs;

struct vhost_user_dev {
	struct virtio_devs *set;
	char name[48];
	struct vu_front front;
	struct virtio_mmio mmio;
	unsigned backend_queues; /* queues 0..n-1 run in the back end; any others stay idle here */
	uint64_t driver_features;
	bool driver_ok;
	bool started[VIRTIO_MMIO_MAX_QUEUES];
	uint16_t base[VIRTIO_MMIO_MAX_QUEUES]; /* where ring q starts (0; a restored one's) */
	uint32_t paused;		       /* bit q: stopped by a save, to start on resume */
	uint32_t event_avail;		       /* vsock: event buffers used by us so far */
	uint32_t device_id;
	uint32_t config_size;
	uint8_t config[VHOST_USER_DEV_CONFIG_MAX];
};

/* A back end failed: the VM stops once, with one line (whichever thread noticed first). */
void vhost_user_dev_fatal(struct vhost_user_dev *v, const char *why);
/* Starts ring q in the back end at v->base[q] (then 0 for a later restart). 0 or -errno. */
int vhost_user_dev_start(struct vhost_user_dev *v, struct virtio_mmio *t, unsigned q);

#endif
