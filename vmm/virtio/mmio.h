/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/mmio.h: the virtio-mmio transport (virtio 1.x, version 2 only) — one 4 KiB
 * register window per device, the status state machine, and the eventfds that keep queue
 * notifications (ioeventfd) and interrupts (irqfd) out of the VMM's own threads. */
#ifndef BULKHEAD_VMM_VIRTIO_MMIO_H
#define BULKHEAD_VMM_VIRTIO_MMIO_H

#include "vmm/vm.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VIRTIO_MMIO_WINDOW     0x1000u
#define VIRTIO_MMIO_MAX_QUEUES 8
#define VIRTIO_MMIO_QUEUE_MAX  1024 /* QueueNumMax we offer: a power of two */
#define VIRTIO_MMIO_CONFIG_MAX 256  /* device config bytes at window offset 0x100 */

/* One virtqueue as the driver described it (guest-physical ring addresses, checked against
 * guest RAM when the driver sets QueueReady). */
struct virtio_mmio_queue {
	uint32_t num;		       /* QueueNum */
	bool ready;		       /* QueueReady */
	uint64_t desc, driver, device; /* QueueDesc, QueueDriver (avail), QueueDevice (used) */
	int kick_fd;		       /* eventfd; KVM_IOEVENTFD on QueueNotify == index */
};

struct virtio_mmio;

/*
 * The one callback struct between transport and device. Every slot is required
 * (virtio_mmio_init refuses a NULL). Called with the transport's lock held, from a vCPU
 * thread. A negative return from features_ok refuses FEATURES_OK; from queue_ready or
 * driver_ok it sets DEVICE_NEEDS_RESET (the device decides whether the VM must stop).
 */
struct virtio_dev_ops {
	uint64_t (*features)(void *dev); /* what the device offers */
	/* Config space [off, off+size), size 1, 2, 4 or 8, within config_size. */
	void (*config_read)(void *dev, uint32_t off, uint8_t *data, unsigned size);
	void (*config_write)(void *dev, uint32_t off, const uint8_t *data, unsigned size);
	int (*features_ok)(void *dev, uint64_t driver_features);
	/* The driver set queue q ready (true) or unready (false); the queue is checked. */
	int (*queue_ready)(void *dev, struct virtio_mmio *t, unsigned q, bool ready);
	int (*driver_ok)(void *dev, struct virtio_mmio *t);
	void (*reset)(void *dev, struct virtio_mmio *t); /* the driver wrote 0 to Status */
};

struct virtio_mmio_cfg {
	uint32_t device_id; /* <linux/virtio_ids.h> */
	unsigned nqueues;   /* 1..VIRTIO_MMIO_MAX_QUEUES */
	uint32_t config_size;
	/* The device's interrupts bypass the VMM (a back end writes the irqfd itself), so the
	 * VMM cannot know when a ring has news: InterruptStatus then always shows the vring
	 * bit once DRIVER_OK is set, and the driver checks every used ring (Linux does). */
	bool irq_bypasses_vmm;
	const struct virtio_dev_ops *ops;
	void *dev;
};

struct virtio_mmio {
	struct vm *vm;
	uint64_t base;
	unsigned gsi;
	struct virtio_mmio_cfg cfg;
	pthread_mutex_t lock;

	uint64_t driver_features;
	uint32_t device_features_sel, driver_features_sel, queue_sel;
	uint32_t status;
	uint32_t isr;
	uint32_t config_generation;
	struct virtio_mmio_queue q[VIRTIO_MMIO_MAX_QUEUES];

	int irq_fd;	       /* eventfd; KVM_IRQFD on gsi (when the VM has a vm_fd) */
	bool kvm_wired;	       /* ioeventfds and irqfd registered with KVM */
	uint64_t bad_accesses; /* wrong size/alignment, out of window, refused writes */
};

/*
 * Sets the transport up at guest-physical `base` (VIRTIO_MMIO_WINDOW bytes, page-aligned) with
 * interrupt `gsi`, registers it on vm->mmio, creates the eventfds, and when vm->vm_fd >= 0
 * wires them to KVM (KVM_IOEVENTFD per queue, KVM_IRQFD; the in-kernel irqchip must exist).
 * Set-up tier: prints one line on failure. Returns 0 or -errno.
 */
int virtio_mmio_init(struct virtio_mmio *t, struct vm *vm, uint64_t base, unsigned gsi,
		     const struct virtio_mmio_cfg *cfg);
/* Unwires from KVM and closes the eventfds (the bus keeps no reference we need to drop). */
void virtio_mmio_destroy(struct virtio_mmio *t);

/* The bus callback (also called directly by unit tests): addr relative to base. */
void virtio_mmio_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size);

/* "virtio_mmio.device=4K@0xd0000000:5" for the kernel command line. Returns the length
 * snprintf would write (truncation when >= len). */
int virtio_mmio_cmdline(const struct virtio_mmio *t, char *buf, size_t len);

/* The features the driver may take (the device's, less what the transport hides). */
uint64_t virtio_mmio_offered(const struct virtio_mmio *t);
/* A split ring's three areas aligned and wholly in guest RAM, its size a power of two. */
bool virtio_mmio_queue_valid(const struct virtio_mmio *t, const struct virtio_mmio_queue *q);

/* What a snapshot keeps of a transport (vmm/virtio/mmio_state.c): the driver's registers and each
 * queue's set-up. */
struct virtio_mmio_state {
	uint64_t driver_features;
	uint32_t device_features_sel, driver_features_sel, queue_sel, status, isr,
		config_generation;
	uint32_t pad;
	struct {
		uint32_t num, ready;
		uint64_t desc, driver, device;
	} q[VIRTIO_MMIO_MAX_QUEUES];
};
void virtio_mmio_save(struct virtio_mmio *t, struct virtio_mmio_state *s);
/* Sets the registers from s after checking them as the guest's writes are checked (status
 * bits that could have been reached, features offered, each ready queue valid in this VM's
 * RAM); calls no device op. -EINVAL when s is no state this transport could have had. */
int virtio_mmio_restore(struct virtio_mmio *t, const struct virtio_mmio_state *s);

/* Raises the config-change interrupt (after the device changed its config space). */
void virtio_mmio_config_changed(struct virtio_mmio *t);

#endif
