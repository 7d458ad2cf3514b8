/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/mmio.c: the virtio-mmio register window. Every guest write is checked against
 * the virtio 1.x state machine; anything out of order is ignored and counted, never fatal. */
#include "vmm/virtio/mmio.h"

#include "vmm/log.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define VIRTIO_MMIO_MAGIC  0x74726976u /* "virt" */
#define VIRTIO_MMIO_VENDOR 0x44484b42u /* "BKHD" */

/* Features the transport itself can honour: device-specific bits, indirect descriptors and
 * event index (ring features the back end implements), VERSION_1. Not NOTIFICATION_DATA
 * (the ioeventfd matches the bare queue index), not packed rings (queue checks assume split
 * rings), not ACCESS_PLATFORM (no IOMMU). */
#define VIRTIO_MMIO_TRANSPORT_FEATURES                                                             \
	(((1ull << 24) - 1) | 1ull << VIRTIO_RING_F_INDIRECT_DESC |                                \
	 1ull << VIRTIO_RING_F_EVENT_IDX | 1ull << VIRTIO_F_VERSION_1)

static const struct bus_ops virtio_mmio_bus_ops = { virtio_mmio_access };

uint64_t virtio_mmio_offered(const struct virtio_mmio *t)
{
	return t->cfg.ops->features(t->cfg.dev) & VIRTIO_MMIO_TRANSPORT_FEATURES;
}

static void virtio_mmio_unwire(struct virtio_mmio *t)
{
	if (!t->kvm_wired)
		return;
	for (unsigned i = 0; i < t->cfg.nqueues; i++) {
		struct kvm_ioeventfd io = {
			.datamatch = i,
			.addr = t->base + VIRTIO_MMIO_QUEUE_NOTIFY,
			.len = 4,
			.fd = t->q[i].kick_fd,
			.flags = KVM_IOEVENTFD_FLAG_DATAMATCH | KVM_IOEVENTFD_FLAG_DEASSIGN,
		};
		ioctl(t->vm->vm_fd, KVM_IOEVENTFD, &io);
	}
	struct kvm_irqfd irq = { .fd = (uint32_t)t->irq_fd,
				 .gsi = t->gsi,
				 .flags = KVM_IRQFD_FLAG_DEASSIGN };
	ioctl(t->vm->vm_fd, KVM_IRQFD, &irq);
	t->kvm_wired = false;
}

/* Registers the eventfds with KVM so kicks and interrupts never pass through our threads. */
static int virtio_mmio_wire(struct virtio_mmio *t)
{
	struct kvm_irqfd irq = { .fd = (uint32_t)t->irq_fd, .gsi = t->gsi };
	if (ioctl(t->vm->vm_fd, KVM_IRQFD, &irq) < 0)
		return -errno;
	t->kvm_wired = true;
	for (unsigned i = 0; i < t->cfg.nqueues; i++) {
		struct kvm_ioeventfd io = {
			.datamatch = i,
			.addr = t->base + VIRTIO_MMIO_QUEUE_NOTIFY,
			.len = 4,
			.fd = t->q[i].kick_fd,
			.flags = KVM_IOEVENTFD_FLAG_DATAMATCH,
		};
		if (ioctl(t->vm->vm_fd, KVM_IOEVENTFD, &io) < 0) {
			int err = -errno;
			/* Deassign what succeeded: the loop below stops at the first failure. */
			t->cfg.nqueues = i;
			virtio_mmio_unwire(t);
			return err;
		}
	}
	return 0;
}

int virtio_mmio_init(struct virtio_mmio *t, struct vm *vm, uint64_t base, unsigned gsi,
		     const struct virtio_mmio_cfg *cfg)
{
	const struct virtio_dev_ops *o = cfg->ops;
	char what[96];
	int err;

	memset(t, 0, sizeof(*t));
	t->irq_fd = -1;
	for (unsigned i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++)
		t->q[i].kick_fd = -1;
	if (!o || !o->features || !o->config_read || !o->config_write || !o->features_ok ||
	    !o->queue_ready || !o->driver_ok || !o->reset || cfg->nqueues == 0 ||
	    cfg->nqueues > VIRTIO_MMIO_MAX_QUEUES || cfg->config_size > VIRTIO_MMIO_CONFIG_MAX ||
	    base % VIRTIO_MMIO_WINDOW) {
		vmm_log_setup("virtio-mmio: bad device declaration", EINVAL,
			      "every device op is required; check queues and config size");
		return -EINVAL;
	}
	t->vm = vm;
	t->base = base;
	t->gsi = gsi;
	t->cfg = *cfg;
	pthread_mutex_init(&t->lock, NULL);

	snprintf(what, sizeof(what), "virtio-mmio device %u at 0x%" PRIx64 ": eventfd",
		 cfg->device_id, base);
	t->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->irq_fd < 0)
		goto fail_errno;
	for (unsigned i = 0; i < cfg->nqueues; i++) {
		t->q[i].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (t->q[i].kick_fd < 0)
			goto fail_errno;
	}
	err = bus_register(&vm->mmio, base, VIRTIO_MMIO_WINDOW, &virtio_mmio_bus_ops, t,
			   "virtio-mmio");
	if (err) {
		snprintf(what, sizeof(what), "virtio-mmio window at 0x%" PRIx64, base);
		vmm_log_setup(what, -err, "it overlaps another device or the bus is full");
		goto fail;
	}
	if (vm->vm_fd >= 0) {
		err = virtio_mmio_wire(t);
		if (err) {
			snprintf(what, sizeof(what), "KVM_IRQFD/KVM_IOEVENTFD for GSI %u", gsi);
			vmm_log_setup(what, -err, "create the in-kernel irqchip first");
			goto fail;
		}
	}
	return 0;

fail_errno:
	err = -errno;
	vmm_log_setup(what, -err, NULL);
fail:
	virtio_mmio_destroy(t);
	return err;
}

void virtio_mmio_destroy(struct virtio_mmio *t)
{
	if (t->vm)
		virtio_mmio_unwire(t);
	for (unsigned i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		if (t->q[i].kick_fd >= 0)
			close(t->q[i].kick_fd);
		t->q[i].kick_fd = -1;
	}
	if (t->irq_fd >= 0)
		close(t->irq_fd);
	t->irq_fd = -1;
}

int virtio_mmio_cmdline(const struct virtio_mmio *t, char *buf, size_t len)
{
	return snprintf(buf, len, "virtio_mmio.device=4K@0x%" PRIx64 ":%u", t->base, t->gsi);
}

static void virtio_mmio_raise(struct virtio_mmio *t, uint32_t bits)
{
	t->isr |= bits;
	/* Non-blocking eventfd: a full counter already means "interrupt pending". */
	(void)eventfd_write(t->irq_fd, 1);
}

void virtio_mmio_config_changed(struct virtio_mmio *t)
{
	pthread_mutex_lock(&t->lock);
	t->config_generation++;
	if (t->status & VIRTIO_CONFIG_S_DRIVER_OK)
		virtio_mmio_raise(t, VIRTIO_MMIO_INT_CONFIG);
	pthread_mutex_unlock(&t->lock);
}

static void virtio_mmio_reset(struct virtio_mmio *t)
{
	t->cfg.ops->reset(t->cfg.dev, t);
	t->driver_features = 0;
	t->device_features_sel = t->driver_features_sel = t->queue_sel = 0;
	t->status = 0;
	t->isr = 0;
	for (unsigned i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		int fd = t->q[i].kick_fd;
		t->q[i] = (struct virtio_mmio_queue){ .kick_fd = fd };
	}
}

/* A split ring's three areas must be aligned and lie wholly in guest RAM. */
bool virtio_mmio_queue_valid(const struct virtio_mmio *t, const struct virtio_mmio_queue *q)
{
	const struct gmem *gm = &t->vm->mem;
	uint64_t n = q->num;

	if (n == 0 || n > VIRTIO_MMIO_QUEUE_MAX || (n & (n - 1)))
		return false;
	if (q->desc % VRING_DESC_ALIGN_SIZE || q->driver % VRING_AVAIL_ALIGN_SIZE ||
	    q->device % VRING_USED_ALIGN_SIZE)
		return false;
	/* flags + idx + ring[n] + used_event; flags + idx + ring[n] + avail_event. */
	return gmem_ptr(gm, q->desc, 16 * n) && gmem_ptr(gm, q->driver, 6 + 2 * n) &&
	       gmem_ptr(gm, q->device, 6 + 8 * n);
}

static void virtio_mmio_set_status(struct virtio_mmio *t, uint32_t v)
{
	const uint32_t driver_bits = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
				     VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK |
				     VIRTIO_CONFIG_S_FAILED;
	uint32_t old = t->status & ~VIRTIO_CONFIG_S_NEEDS_RESET;
	uint32_t added = v & ~old;

	if (v == 0) {
		virtio_mmio_reset(t);
		return;
	}
	/* Bits only ever accumulate until a reset; each needs its predecessor. */
	if ((old & ~v) || (v & ~driver_bits) ||
	    ((v & VIRTIO_CONFIG_S_DRIVER) && !(v & VIRTIO_CONFIG_S_ACKNOWLEDGE)) ||
	    ((v & VIRTIO_CONFIG_S_FEATURES_OK) && !(v & VIRTIO_CONFIG_S_DRIVER)) ||
	    ((v & VIRTIO_CONFIG_S_DRIVER_OK) && !(v & VIRTIO_CONFIG_S_FEATURES_OK))) {
		t->bad_accesses++;
		return;
	}
	if (added & VIRTIO_CONFIG_S_FEATURES_OK) {
		uint64_t f = t->driver_features;
		/* Not accepted: FEATURES_OK stays clear, which the driver reads back. */
		if ((f & ~virtio_mmio_offered(t)) || !(f & (1ull << VIRTIO_F_VERSION_1)) ||
		    t->cfg.ops->features_ok(t->cfg.dev, f) < 0) {
			t->status =
				(t->status & VIRTIO_CONFIG_S_NEEDS_RESET) |
				(v & ~(VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK));
			return;
		}
	}
	t->status = (t->status & VIRTIO_CONFIG_S_NEEDS_RESET) | v;
	if ((added & VIRTIO_CONFIG_S_DRIVER_OK) && !(t->status & VIRTIO_CONFIG_S_NEEDS_RESET) &&
	    t->cfg.ops->driver_ok(t->cfg.dev, t) < 0) {
		t->status |= VIRTIO_CONFIG_S_NEEDS_RESET;
		virtio_mmio_raise(t, VIRTIO_MMIO_INT_CONFIG);
	}
}

/* Queue registers may change only between FEATURES_OK and the queue going ready. */
static struct virtio_mmio_queue *virtio_mmio_setup_queue(struct virtio_mmio *t)
{
	if (!(t->status & VIRTIO_CONFIG_S_FEATURES_OK) ||
	    (t->status & (VIRTIO_CONFIG_S_NEEDS_RESET | VIRTIO_CONFIG_S_FAILED)) ||
	    t->queue_sel >= t->cfg.nqueues || t->q[t->queue_sel].ready)
		return NULL;
	return &t->q[t->queue_sel];
}

static void virtio_mmio_set_half(uint64_t *reg, bool high, uint32_t v)
{
	if (high)
		*reg = (*reg & 0xffffffffull) | (uint64_t)v << 32;
	else
		*reg = (*reg & ~0xffffffffull) | v;
}

static void virtio_mmio_queue_ready(struct virtio_mmio *t, uint32_t v)
{
	unsigned qi = t->queue_sel;
	struct virtio_mmio_queue *q;

	if (v == 1) {
		q = virtio_mmio_setup_queue(t);
		if (!q || !virtio_mmio_queue_valid(t, q)) {
			t->bad_accesses++;
			return;
		}
		q->ready = true;
		if (t->cfg.ops->queue_ready(t->cfg.dev, t, qi, true) < 0) {
			q->ready = false;
			t->status |= VIRTIO_CONFIG_S_NEEDS_RESET;
		}
		return;
	}
	if (v != 0 || qi >= t->cfg.nqueues) {
		t->bad_accesses++;
		return;
	}
	if (t->q[qi].ready) {
		t->cfg.ops->queue_ready(t->cfg.dev, t, qi, false);
		t->q[qi].ready = false;
	}
}

static void virtio_mmio_write_reg(struct virtio_mmio *t, uint64_t addr, uint32_t v)
{
	struct virtio_mmio_queue *q;

	switch (addr) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		t->device_features_sel = v;
		return;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		t->driver_features_sel = v;
		return;
	case VIRTIO_MMIO_DRIVER_FEATURES:
		/* Only while negotiating: after FEATURES_OK the set is frozen. */
		if ((t->status & VIRTIO_CONFIG_S_DRIVER) &&
		    !(t->status & VIRTIO_CONFIG_S_FEATURES_OK) && t->driver_features_sel < 2) {
			virtio_mmio_set_half(&t->driver_features, t->driver_features_sel == 1, v);
			return;
		}
		break;
	case VIRTIO_MMIO_QUEUE_SEL:
		t->queue_sel = v;
		return;
	case VIRTIO_MMIO_QUEUE_NUM:
		q = virtio_mmio_setup_queue(t);
		if (q) {
			q->num = v;
			return;
		}
		break;
	case VIRTIO_MMIO_QUEUE_READY:
		virtio_mmio_queue_ready(t, v);
		return;
	case VIRTIO_MMIO_QUEUE_NOTIFY:
		/* With KVM wired, a kick for a real queue never gets here (the ioeventfd takes
		 * it in the kernel); this is the slow path for unwired transports. */
		if (v < t->cfg.nqueues && t->q[v].ready &&
		    (t->status & VIRTIO_CONFIG_S_DRIVER_OK)) {
			(void)eventfd_write(t->q[v].kick_fd, 1);
			return;
		}
		break;
	case VIRTIO_MMIO_INTERRUPT_ACK:
		t->isr &= ~v;
		return;
	case VIRTIO_MMIO_STATUS:
		virtio_mmio_set_status(t, v);
		return;
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
	case VIRTIO_MMIO_QUEUE_AVAIL_LOW:
	case VIRTIO_MMIO_QUEUE_AVAIL_HIGH:
	case VIRTIO_MMIO_QUEUE_USED_LOW:
	case VIRTIO_MMIO_QUEUE_USED_HIGH:
		q = virtio_mmio_setup_queue(t);
		if (!q)
			break;
		if (addr < VIRTIO_MMIO_QUEUE_AVAIL_LOW)
			virtio_mmio_set_half(&q->desc, addr == VIRTIO_MMIO_QUEUE_DESC_HIGH, v);
		else if (addr < VIRTIO_MMIO_QUEUE_USED_LOW)
			virtio_mmio_set_half(&q->driver, addr == VIRTIO_MMIO_QUEUE_AVAIL_HIGH, v);
		else
			virtio_mmio_set_half(&q->device, addr == VIRTIO_MMIO_QUEUE_USED_HIGH, v);
		return;
	case VIRTIO_MMIO_SHM_SEL:
		return; /* no shared-memory regions: every length reads as ~0 ("absent") */
	default:
		break;
	}
	t->bad_accesses++;
}

static bool virtio_mmio_read_reg(struct virtio_mmio *t, uint64_t addr, uint32_t *v)
{
	uint64_t f;

	switch (addr) {
	case VIRTIO_MMIO_MAGIC_VALUE:
		*v = VIRTIO_MMIO_MAGIC;
		return true;
	case VIRTIO_MMIO_VERSION:
		*v = 2;
		return true;
	case VIRTIO_MMIO_DEVICE_ID:
		*v = t->cfg.device_id;
		return true;
	case VIRTIO_MMIO_VENDOR_ID:
		*v = VIRTIO_MMIO_VENDOR;
		return true;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		f = virtio_mmio_offered(t);
		*v = t->device_features_sel == 0   ? (uint32_t)f
		     : t->device_features_sel == 1 ? (uint32_t)(f >> 32)
						   : 0;
		return true;
	case VIRTIO_MMIO_QUEUE_NUM_MAX:
		*v = t->queue_sel < t->cfg.nqueues ? VIRTIO_MMIO_QUEUE_MAX : 0;
		return true;
	case VIRTIO_MMIO_QUEUE_READY:
		*v = t->queue_sel < t->cfg.nqueues && t->q[t->queue_sel].ready;
		return true;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		*v = t->isr;
		if (t->cfg.irq_bypasses_vmm && (t->status & VIRTIO_CONFIG_S_DRIVER_OK))
			*v |= VIRTIO_MMIO_INT_VRING;
		return true;
	case VIRTIO_MMIO_STATUS:
		*v = t->status;
		return true;
	case VIRTIO_MMIO_CONFIG_GENERATION:
		*v = t->config_generation;
		return true;
	case VIRTIO_MMIO_SHM_LEN_LOW:
	case VIRTIO_MMIO_SHM_LEN_HIGH:
	case VIRTIO_MMIO_SHM_BASE_LOW:
	case VIRTIO_MMIO_SHM_BASE_HIGH:
		*v = 0xffffffffu; /* no shared-memory region (the spec's "absent") */
		return true;
	default:
		return false; /* write-only, legacy or unknown: all-ones, counted */
	}
}

void virtio_mmio_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	struct virtio_mmio *t = opaque;

	pthread_mutex_lock(&t->lock);
	if (addr >= VIRTIO_MMIO_CONFIG) {
		uint64_t off = addr - VIRTIO_MMIO_CONFIG;
		/* Config space: naturally aligned 1/2/4/8-byte accesses inside the device's
		 * config only; the bus never passes an offset beyond the window. */
		if ((size == 1 || size == 2 || size == 4 || size == 8) && off % size == 0 &&
		    off < t->cfg.config_size && size <= t->cfg.config_size - off) {
			if (is_write)
				t->cfg.ops->config_write(t->cfg.dev, (uint32_t)off, data, size);
			else
				t->cfg.ops->config_read(t->cfg.dev, (uint32_t)off, data, size);
		} else {
			t->bad_accesses++;
		}
		goto out;
	}
	/* Registers: 32-bit, 32-bit aligned, as the spec requires of drivers. */
	if (size != 4 || addr % 4) {
		t->bad_accesses++;
		goto out;
	}
	uint32_t v;
	if (is_write) {
		memcpy(&v, data, 4);
		virtio_mmio_write_reg(t, addr, v);
	} else if (virtio_mmio_read_reg(t, addr, &v)) {
		memcpy(data, &v, 4);
	} else {
		t->bad_accesses++;
	}
out:
	pthread_mutex_unlock(&t->lock);
}
