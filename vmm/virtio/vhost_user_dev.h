/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/vhost_user_dev.h: declared virtio devices served by vhost-user back ends
 * (virtio-fs by virtiofsd, virtio-vsock by bulkhead-vsock), placed in the MMIO hole, and the
 * watch that stops the VM when a back end dies. The API bulkhead-vmm's device table uses. */
#ifndef BULKHEAD_VMM_VIRTIO_VHOST_USER_DEV_H
#define BULKHEAD_VMM_VIRTIO_VHOST_USER_DEV_H

#include "vmm/virtio/mmio.h"
#include "vmm/virtio/vu_front.h"
#include "vmm/vm.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define VIRTIO_DEVS_MAX	     8
#define VIRTIO_FS_TAG_MAX    36 /* struct virtio_fs_config.tag */
#define VIRTIO_VSOCK_CID_MIN 3	/* 0-2 are reserved (hypervisor, local, host) */

enum vhost_user_dev_type {
	VHOST_USER_DEV_FS,    /* virtio-fs: hiprio + request queues */
	VHOST_USER_DEV_VSOCK, /* virtio-vsock: rx, tx (back end); event (ours: a restore's reset) */
};

struct vhost_user_dev_cfg {
	enum vhost_user_dev_type type;
	const char *socket_path; /* the back end listens here; or NULL and: */
	int socket_fd;		 /* a Unix socket already connected to it (owned from now on) */
	const char *name;	 /* in messages: "virtiofsd (work)" */
	const char *fs_tag;	 /* FS: 1..36 bytes, the guest's mount source */
	uint64_t vsock_cid;	 /* VSOCK: the guest's CID, >= 3 */
	unsigned timeout_ms;	 /* per reply; 0: VU_FRONT_TIMEOUT_MS */
};

struct vhost_user_dev;

struct virtio_devs {
	struct vm *vm;
	uint64_t base;	    /* first window */
	unsigned nslots;    /* windows available from base */
	unsigned first_gsi; /* device i gets first_gsi + i */
	unsigned n;
	struct vhost_user_dev *devs[VIRTIO_DEVS_MAX];

	/* Called once, from whichever thread saw a back end fail, after vm_request_stop():
	 * its job is to get the vCPUs out of KVM_RUN (e.g. signal their threads). */
	void (*on_stop)(void *arg);
	void *on_stop_arg;
	atomic_bool stopped;
	/* Run first on the watcher thread (its seccomp filter); virtio_devs_watch() waits for
	 * it and fails with it. NULL: nothing. */
	int (*watcher_start)(void *arg);
	void *watcher_start_arg;
	sem_t watcher_started;
	int watcher_start_err;
	pthread_t watcher;
	bool watching;
	int wake_fd; /* eventfd: tells the watcher to exit */
};

/* Places devices at base, base + 4 KiB, ... (nslots windows) with GSIs first_gsi, ... */
void virtio_devs_init(struct virtio_devs *d, struct vm *vm, uint64_t base, unsigned nslots,
		      unsigned first_gsi);

/* Set-up tier: connects to the back end, negotiates, sends the memory table (so guest RAM
 * must exist: after vm_create), and registers the transport. Prints one line on failure.
 * Returns 0 or -errno. */
int virtio_vhost_user_add(struct virtio_devs *d, const struct vhost_user_dev_cfg *cfg);

/* The devices' kernel command-line entries, space-separated ("virtio_mmio.device=4K@0x...:5
 * ..."). Returns the length snprintf would write (truncation when >= len). */
int virtio_devs_cmdline(const struct virtio_devs *d, char *buf, size_t len);

/* Starts the thread that watches every back end's socket; a hang-up stops the VM with
 * VMM_EXIT_BACKEND (one stderr line), then calls on_stop(arg). Returns once the thread ran
 * d->watcher_start: 0 or -errno. */
int virtio_devs_watch(struct virtio_devs *d, void (*on_stop)(void *arg), void *arg);

/* Stops the watcher, closes the back-end connections and the transports (reverse order). */
void virtio_devs_destroy(struct virtio_devs *d);

/* What a snapshot keeps of device i: its transport, the driver's features, and where each
 * running ring stood in its back end (GET_VRING_BASE's next avail index). */
struct vhost_user_dev_state {
	uint32_t device_id, nqueues;
	uint8_t config[64]; /* the config space the guest saw (tag, CID) */
	struct virtio_mmio_state mmio;
	uint64_t driver_features;
	uint32_t driver_ok;
	uint32_t started;		       /* bit q: ring q ran in the back end */
	uint32_t base[VIRTIO_MMIO_MAX_QUEUES]; /* its next avail index */
	uint32_t event_avail;		       /* vsock: event buffers the VMM has used */
	uint32_t pad;
};
/* Saving (every vCPU parked): stops device i's rings in its back end (GET_VRING_BASE) and
 * fills s. 0 or -errno after one line. */
int virtio_devs_save(struct virtio_devs *d, unsigned i, struct vhost_user_dev_state *s);
/* A save that failed: the stopped rings start again where they stood. 0 or -errno (the
 * back end failed: the VM stops with VMM_EXIT_BACKEND). */
int virtio_devs_resume(struct virtio_devs *d);
/* Restoring, before any vCPU runs, with a new back end already connected (set-up): checks s
 * against device i (type, queues, config space, transport), sets the transport, and starts
 * the rings that ran where they stood. A vsock device then tells the guest its transport
 * was reset (an event on its event queue): its connections are gone with the old back
 * end. Set-up tier (one line), 0 or -errno. */
int virtio_devs_restore(struct virtio_devs *d, unsigned i, const struct vhost_user_dev_state *s);

/* The back-end socket of device i (what the vCPU threads' allow-list pins), or -1. */
int virtio_devs_socket(const struct virtio_devs *d, unsigned i);

/* The transport of device i (tests and diagnostics), or NULL. */
struct virtio_mmio *virtio_devs_transport(struct virtio_devs *d, unsigned i);

#endif
