/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_virtio_mmio.c: libFuzzer target for the virtio-mmio transport as a hostile
 * driver drives it: a sequence of MMIO reads and writes of any size and offset around the
 * register window, sent through the VM's bus as a vCPU exit would be (no KVM).
 *
 * Layout: cfg[3] (config space size, number of queues, device behaviour), then 11-byte
 * accesses { flags (bit 0 write, bits 1-3 size - 1), u16 offset, u64 value }. A fake device
 * checks what the transport promises it: config accesses of 1/2/4/8 bytes inside its config
 * (kept in a heap block of exactly that size), only offered features with VERSION_1 at
 * FEATURES_OK, a queue handed over ready only when valid (ring areas in guest RAM), DRIVER_OK
 * only after FEATURES_OK. After every access the status holds only legal bit combinations. */
#include "vmm/bus.h"
#include "vmm/gmem.h"
#include "vmm/virtio/mmio.h"

#include <assert.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BASE	  0xd0000000ull
#define RAM_SIZE  (1u << 20)
#define ACCESS_SZ 11

struct fake_dev {
	uint64_t features;
	uint8_t *config; /* exactly config_size bytes */
	uint32_t config_size;
	unsigned nqueues;
	bool refuse_features, fail_queue, fail_driver_ok;
	bool ready[VIRTIO_MMIO_MAX_QUEUES];
};

static struct vm vm;
static struct fake_dev dev;
static struct virtio_mmio t;

static uint64_t f_features(void *d)
{
	return ((struct fake_dev *)d)->features;
}

static void check_config(uint32_t off, unsigned size)
{
	assert(size == 1 || size == 2 || size == 4 || size == 8);
	assert(off % size == 0 && off < dev.config_size && size <= dev.config_size - off);
}

static void f_config_read(void *d, uint32_t off, uint8_t *data, unsigned size)
{
	check_config(off, size);
	memcpy(data, ((struct fake_dev *)d)->config + off, size);
}

static void f_config_write(void *d, uint32_t off, const uint8_t *data, unsigned size)
{
	check_config(off, size);
	memcpy(((struct fake_dev *)d)->config + off, data, size);
}

static int f_features_ok(void *d, uint64_t f)
{
	struct fake_dev *fd = d;
	assert(!(f & ~fd->features) && (f & 1ull << VIRTIO_F_VERSION_1));
	/* The transport keeps ACCESS_PLATFORM and NOTIFICATION_DATA to itself. */
	assert(!(f & (1ull << 33 | 1ull << 38)));
	return fd->refuse_features ? -1 : 0;
}

static int f_queue_ready(void *d, struct virtio_mmio *tr, unsigned q, bool ready)
{
	struct fake_dev *fd = d;
	assert(tr == &t && q < fd->nqueues && fd->ready[q] != ready);
	if (ready) {
		const struct virtio_mmio_queue *vq = &tr->q[q];
		uint64_t n = vq->num;
		assert(tr->status & VIRTIO_CONFIG_S_FEATURES_OK);
		assert(n && n <= VIRTIO_MMIO_QUEUE_MAX && !(n & (n - 1)));
		assert(gmem_ptr(&vm.mem, vq->desc, 16 * n) &&
		       gmem_ptr(&vm.mem, vq->driver, 6 + 2 * n) &&
		       gmem_ptr(&vm.mem, vq->device, 6 + 8 * n));
		if (fd->fail_queue)
			return -1;
	}
	fd->ready[q] = ready;
	return 0;
}

static int f_driver_ok(void *d, struct virtio_mmio *tr)
{
	struct fake_dev *fd = d;
	assert(tr->status & VIRTIO_CONFIG_S_FEATURES_OK);
	return fd->fail_driver_ok ? -1 : 0;
}

static void f_reset(void *d, struct virtio_mmio *tr)
{
	(void)tr;
	struct fake_dev *fd = d;
	memset(fd->ready, 0, sizeof(fd->ready));
}

static const struct virtio_dev_ops ops = {
	f_features,    f_config_read, f_config_write, f_features_ok,
	f_queue_ready, f_driver_ok,   f_reset,
};

static void check_state(void)
{
	const uint32_t legal = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			       VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK |
			       VIRTIO_CONFIG_S_FAILED | VIRTIO_CONFIG_S_NEEDS_RESET;
	uint32_t s = t.status;
	assert(!(s & ~legal));
	assert(!(s & VIRTIO_CONFIG_S_DRIVER) || (s & VIRTIO_CONFIG_S_ACKNOWLEDGE));
	assert(!(s & VIRTIO_CONFIG_S_FEATURES_OK) || (s & VIRTIO_CONFIG_S_DRIVER));
	assert(!(s & VIRTIO_CONFIG_S_DRIVER_OK) || (s & VIRTIO_CONFIG_S_FEATURES_OK));
	/* The transport and the device agree on which queues are live. */
	for (unsigned q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
		assert(t.q[q].ready == (q < dev.nqueues && dev.ready[q]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ram;
	if (!ram) {
		vm.kvm_fd = vm.vm_fd = vm.stop.fd = -1;
		if (gmem_init(&vm.mem, RAM_SIZE) || gmem_add_region(&vm.mem, 0, 0, RAM_SIZE))
			abort();
		ram = true;
	}
	if (size < 3)
		return 0;
	memset(&dev, 0, sizeof(dev));
	dev.config_size = data[0];
	dev.config = malloc(dev.config_size);
	memset(dev.config, 0xa5, dev.config_size);
	dev.nqueues = 1 + data[1] % VIRTIO_MMIO_MAX_QUEUES;
	dev.features = 1ull | 1ull << 29 | 1ull << VIRTIO_F_VERSION_1 | 1ull << 33 | 1ull << 38;
	dev.refuse_features = data[2] & 1;
	dev.fail_queue = data[2] & 2;
	dev.fail_driver_ok = data[2] & 4;
	bus_init(&vm.pio, "port");
	bus_init(&vm.mmio, "MMIO");
	struct virtio_mmio_cfg cfg = { .device_id = 19,
				       .nqueues = dev.nqueues,
				       .config_size = dev.config_size,
				       .irq_bypasses_vmm = data[2] & 8,
				       .ops = &ops,
				       .dev = &dev };
	int err = virtio_mmio_init(&t, &vm, BASE, 5, &cfg);
	assert(err == 0);

	for (size_t i = 3; i + ACCESS_SZ <= size; i += ACCESS_SZ) {
		const uint8_t *a = data + i;
		bool is_write = a[0] & 1;
		unsigned len = 1 + ((a[0] >> 1) & 7);
		uint64_t off =
			((uint64_t)a[1] | (uint64_t)a[2] << 8) & 0x1fff; /* window and beyond */
		uint8_t *buf = malloc(len); /* exactly len: ASan sees a write past it */
		memcpy(buf, a + 3, len);
		bus_access(&vm.mmio, BASE + off, is_write, buf, len);
		free(buf);
		check_state();
	}
	virtio_mmio_destroy(&t);
	free(dev.config);
	return 0;
}
