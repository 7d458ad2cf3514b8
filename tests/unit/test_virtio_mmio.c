/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_virtio_mmio.c: the virtio-mmio register state machine as a hostile driver
 * sees it — status order, feature negotiation, queue set-up only after FEATURES_OK, ring
 * checks, wrong sizes and offsets, reset. The transport runs unwired (no KVM). */
#include "vmm/virtio/mmio.h"

#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#define BASE  0xd0000000ull
#define S_AD  (VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER)
#define S_FOK (S_AD | VIRTIO_CONFIG_S_FEATURES_OK)

struct fake_dev {
	uint64_t features;
	int refuse_features, fail_driver_ok;
	unsigned ready_calls, unready_calls, driver_ok_calls, reset_calls;
	uint64_t accepted;
	uint8_t config[8];
};

static uint64_t f_features(void *d)
{
	return ((struct fake_dev *)d)->features;
}
static void f_config_read(void *d, uint32_t off, uint8_t *data, unsigned size)
{
	memcpy(data, ((struct fake_dev *)d)->config + off, size);
}
static void f_config_write(void *d, uint32_t off, const uint8_t *data, unsigned size)
{
	memcpy(((struct fake_dev *)d)->config + off, data, size);
}
static int f_features_ok(void *d, uint64_t f)
{
	struct fake_dev *fd = d;
	fd->accepted = f;
	return fd->refuse_features ? -1 : 0;
}
static int f_queue_ready(void *d, struct virtio_mmio *t, unsigned q, bool ready)
{
	(void)t;
	(void)q;
	struct fake_dev *fd = d;
	if (ready)
		fd->ready_calls++;
	else
		fd->unready_calls++;
	return 0;
}
static int f_driver_ok(void *d, struct virtio_mmio *t)
{
	(void)t;
	struct fake_dev *fd = d;
	fd->driver_ok_calls++;
	return fd->fail_driver_ok ? -1 : 0;
}
static void f_reset(void *d, struct virtio_mmio *t)
{
	(void)t;
	((struct fake_dev *)d)->reset_calls++;
}

static const struct virtio_dev_ops fake_ops = {
	f_features,    f_config_read, f_config_write, f_features_ok,
	f_queue_ready, f_driver_ok,   f_reset,
};

struct fixture {
	struct vm vm;
	struct fake_dev dev;
	struct virtio_mmio t;
};

static int setup(void **state)
{
	static struct fixture fx;
	memset(&fx, 0, sizeof(fx));
	fx.vm.kvm_fd = fx.vm.vm_fd = fx.vm.stop.fd = -1;
	bus_init(&fx.vm.pio, "port");
	bus_init(&fx.vm.mmio, "MMIO");
	if (gmem_init(&fx.vm.mem, 1 << 20) || gmem_add_region(&fx.vm.mem, 0, 0, 1 << 20))
		return -1;
	/* Device bit 0, a ring feature, VERSION_1, and two bits the transport must hide
	 * (NOTIFICATION_DATA 38, ACCESS_PLATFORM 33). */
	fx.dev.features = 1ull | 1ull << 29 | 1ull << VIRTIO_F_VERSION_1 | 1ull << 38 | 1ull << 33;
	memcpy(fx.dev.config, "abcdefgh", 8);
	struct virtio_mmio_cfg cfg = {
		.device_id = 26, .nqueues = 2, .config_size = 8, .ops = &fake_ops, .dev = &fx.dev
	};
	if (virtio_mmio_init(&fx.t, &fx.vm, BASE, 5, &cfg))
		return -1;
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	virtio_mmio_destroy(&fx->t);
	gmem_destroy(&fx->vm.mem);
	return 0;
}

static uint32_t rd(struct fixture *fx, uint64_t off)
{
	uint32_t v;
	bus_access(&fx->vm.mmio, BASE + off, false, (uint8_t *)&v, 4);
	return v;
}

static void wr(struct fixture *fx, uint64_t off, uint32_t v)
{
	bus_access(&fx->vm.mmio, BASE + off, true, (uint8_t *)&v, 4);
}

static void negotiate(struct fixture *fx, uint64_t f)
{
	wr(fx, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(fx, VIRTIO_MMIO_STATUS, S_AD);
	wr(fx, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(fx, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)f);
	wr(fx, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(fx, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(f >> 32));
	wr(fx, VIRTIO_MMIO_STATUS, S_FOK);
}

static void setup_queue(struct fixture *fx, unsigned q, uint32_t num, uint64_t desc)
{
	wr(fx, VIRTIO_MMIO_QUEUE_SEL, q);
	wr(fx, VIRTIO_MMIO_QUEUE_NUM, num);
	wr(fx, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)desc);
	wr(fx, VIRTIO_MMIO_QUEUE_DESC_HIGH, (uint32_t)(desc >> 32));
	wr(fx, VIRTIO_MMIO_QUEUE_AVAIL_LOW, 0x2000);
	wr(fx, VIRTIO_MMIO_QUEUE_AVAIL_HIGH, 0);
	wr(fx, VIRTIO_MMIO_QUEUE_USED_LOW, 0x3000);
	wr(fx, VIRTIO_MMIO_QUEUE_USED_HIGH, 0);
	wr(fx, VIRTIO_MMIO_QUEUE_READY, 1);
}

static void test_identity(void **state)
{
	struct fixture *fx = *state;
	char cmd[64];

	assert_int_equal(rd(fx, VIRTIO_MMIO_MAGIC_VALUE), 0x74726976);
	assert_int_equal(rd(fx, VIRTIO_MMIO_VERSION), 2);
	assert_int_equal(rd(fx, VIRTIO_MMIO_DEVICE_ID), 26);
	wr(fx, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	/* VERSION_1 only: NOTIFICATION_DATA and ACCESS_PLATFORM are masked. */
	assert_int_equal(rd(fx, VIRTIO_MMIO_DEVICE_FEATURES), 1);
	wr(fx, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	assert_int_equal(rd(fx, VIRTIO_MMIO_DEVICE_FEATURES), 1u | 1u << 29);
	wr(fx, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 7);
	assert_int_equal(rd(fx, VIRTIO_MMIO_DEVICE_FEATURES), 0);
	virtio_mmio_cmdline(&fx->t, cmd, sizeof(cmd));
	assert_string_equal(cmd, "virtio_mmio.device=4K@0xd0000000:5");
}

static void test_status_order(void **state)
{
	struct fixture *fx = *state;
	uint64_t bad = fx->t.bad_accesses;

	/* DRIVER before ACKNOWLEDGE; FEATURES_OK before DRIVER; DRIVER_OK before FEATURES_OK. */
	wr(fx, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_DRIVER);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), 0);
	wr(fx, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(fx, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_FEATURES_OK);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(fx, VIRTIO_MMIO_STATUS, S_AD);
	wr(fx, VIRTIO_MMIO_STATUS, S_AD | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_AD);
	/* Clearing a bit without a reset; the device-owned NEEDS_RESET bit. */
	wr(fx, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(fx, VIRTIO_MMIO_STATUS, S_AD | VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_AD);
	assert_int_equal(fx->t.bad_accesses, bad + 5);
	assert_int_equal(fx->dev.driver_ok_calls, 0);
	/* FAILED is always the driver's to set. */
	wr(fx, VIRTIO_MMIO_STATUS, S_AD | VIRTIO_CONFIG_S_FAILED);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_AD | VIRTIO_CONFIG_S_FAILED);
	wr(fx, VIRTIO_MMIO_STATUS, 0);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(fx->dev.reset_calls, 1);
}

static void test_feature_negotiation(void **state)
{
	struct fixture *fx = *state;

	/* Without VERSION_1: FEATURES_OK does not stick (legacy drivers are not served). */
	negotiate(fx, 1);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_AD);
	/* A bit the device did not offer (hidden ACCESS_PLATFORM). */
	wr(fx, VIRTIO_MMIO_STATUS, 0);
	negotiate(fx, 1ull << VIRTIO_F_VERSION_1 | 1ull << 33);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_AD);
	/* The device itself refuses. */
	wr(fx, VIRTIO_MMIO_STATUS, 0);
	fx->dev.refuse_features = 1;
	negotiate(fx, 1ull << VIRTIO_F_VERSION_1);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_AD);
	fx->dev.refuse_features = 0;
	/* A good set. */
	wr(fx, VIRTIO_MMIO_STATUS, 0);
	negotiate(fx, 1ull << VIRTIO_F_VERSION_1 | 1);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_FOK);
	assert_int_equal(fx->dev.accepted, 1ull << VIRTIO_F_VERSION_1 | 1);
	/* After FEATURES_OK the driver's features are frozen. */
	uint64_t bad = fx->t.bad_accesses;
	wr(fx, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(fx, VIRTIO_MMIO_DRIVER_FEATURES, 0xffffffff);
	assert_int_equal(fx->t.driver_features, 1ull << VIRTIO_F_VERSION_1 | 1);
	assert_int_equal(fx->t.bad_accesses, bad + 1);
}

static void test_queue_before_features_ok(void **state)
{
	struct fixture *fx = *state;

	wr(fx, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(fx, VIRTIO_MMIO_STATUS, S_AD);
	setup_queue(fx, 0, 8, 0x1000);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 0);
	assert_int_equal(fx->t.q[0].num, 0);
	assert_int_equal(fx->t.q[0].desc, 0);
	assert_int_equal(fx->dev.ready_calls, 0);
}

static void test_queue_checks(void **state)
{
	struct fixture *fx = *state;

	negotiate(fx, 1ull << VIRTIO_F_VERSION_1);
	wr(fx, VIRTIO_MMIO_QUEUE_SEL, 0);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_NUM_MAX), VIRTIO_MMIO_QUEUE_MAX);
	wr(fx, VIRTIO_MMIO_QUEUE_SEL, 2);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_NUM_MAX), 0); /* no such queue */
	setup_queue(fx, 2, 8, 0x1000);
	assert_int_equal(fx->dev.ready_calls, 0);
	/* Not a power of two; above the maximum; misaligned; outside RAM; wrapping. */
	setup_queue(fx, 0, 6, 0x1000);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 0);
	setup_queue(fx, 0, 2 * VIRTIO_MMIO_QUEUE_MAX, 0x1000);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 0);
	setup_queue(fx, 0, 8, 0x1008);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 0);
	setup_queue(fx, 0, 8, (1 << 20) - 64);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 0);
	setup_queue(fx, 0, 8, 0xfffffffffffffff0ull);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 0);
	assert_int_equal(fx->dev.ready_calls, 0);
	/* A good queue; then its registers are frozen while it is ready. */
	setup_queue(fx, 0, 8, 0x1000);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 1);
	assert_int_equal(fx->dev.ready_calls, 1);
	wr(fx, VIRTIO_MMIO_QUEUE_NUM, 16);
	assert_int_equal(fx->t.q[0].num, 8);
	/* DRIVER_OK, then a kick on the slow path reaches the queue's eventfd. */
	wr(fx, VIRTIO_MMIO_STATUS, S_FOK | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(fx->dev.driver_ok_calls, 1);
	wr(fx, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	eventfd_t n = 0;
	assert_int_equal(eventfd_read(fx->t.q[0].kick_fd, &n), 0);
	assert_int_equal(n, 1);
	uint64_t bad = fx->t.bad_accesses;
	wr(fx, VIRTIO_MMIO_QUEUE_NOTIFY, 1); /* not ready */
	wr(fx, VIRTIO_MMIO_QUEUE_NOTIFY, 99);
	assert_int_equal(fx->t.bad_accesses, bad + 2);
	/* Reset: queues forgotten, device told. */
	wr(fx, VIRTIO_MMIO_STATUS, 0);
	wr(fx, VIRTIO_MMIO_QUEUE_SEL, 0);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 0);
	assert_int_equal(fx->t.q[0].num, 0);
	assert_int_equal(fx->dev.reset_calls, 1);
}

static void test_driver_ok_failure(void **state)
{
	struct fixture *fx = *state;

	negotiate(fx, 1ull << VIRTIO_F_VERSION_1);
	fx->dev.fail_driver_ok = 1;
	wr(fx, VIRTIO_MMIO_STATUS, S_FOK | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_true(rd(fx, VIRTIO_MMIO_STATUS) & VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_true(rd(fx, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	/* No more queue set-up until a reset. */
	setup_queue(fx, 0, 8, 0x1000);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 0);
	wr(fx, VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(rd(fx, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
}

static void test_bad_accesses(void **state)
{
	struct fixture *fx = *state;
	uint8_t b[8];
	uint64_t bad = fx->t.bad_accesses;

	/* Registers only as aligned 32-bit accesses. */
	memset(b, 0, sizeof(b));
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_MAGIC_VALUE, false, b, 2);
	assert_int_equal(b[0] & b[1], 0xff);
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_STATUS + 1, true, b, 4);
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_STATUS, true, b, 8);
	/* Legacy and write-only registers; an unused hole. */
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_PFN), 0xffffffff);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_DESC_LOW), 0xffffffff);
	wr(fx, VIRTIO_MMIO_GUEST_PAGE_SIZE, 4096);
	assert_int_equal(rd(fx, 0xf0), 0xffffffff);
	assert_int_equal(fx->t.bad_accesses, bad + 7);
	/* Config space: inside works at each width; past the device's 8 bytes is all-ones. */
	uint32_t v = 0;
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_CONFIG + 4, false, (uint8_t *)&v, 4);
	assert_memory_equal(&v, "efgh", 4);
	uint64_t q = 0;
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_CONFIG, false, (uint8_t *)&q, 8);
	assert_memory_equal(&q, "abcdefgh", 8);
	v = 0;
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_CONFIG + 6, false, (uint8_t *)&v, 4);
	assert_int_equal(v, 0xffffffff);
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_CONFIG + 8, false, (uint8_t *)&v, 1);
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_CONFIG + 1, false, (uint8_t *)&v, 2);
	assert_int_equal(fx->t.bad_accesses, bad + 10);
	/* Past the 4 KiB window: not ours at all (the bus counts it). */
	uint64_t unknown = fx->vm.mmio.unknown_reads;
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_WINDOW, false, (uint8_t *)&v, 4);
	bus_access(&fx->vm.mmio, BASE + VIRTIO_MMIO_WINDOW - 2, false, (uint8_t *)&v, 4);
	assert_int_equal(fx->vm.mmio.unknown_reads, unknown + 2);
	assert_int_equal(v, 0xffffffff);
}

static void test_incomplete_ops_refused(void **state)
{
	(void)state;
	struct virtio_dev_ops ops = fake_ops;
	struct virtio_mmio t;
	struct vm vm;
	struct fake_dev d = { 0 };

	memset(&vm, 0, sizeof(vm));
	vm.vm_fd = -1;
	bus_init(&vm.mmio, "MMIO");
	ops.reset = NULL;
	struct virtio_mmio_cfg cfg = { .device_id = 26, .nqueues = 2, .ops = &ops, .dev = &d };
	assert_int_equal(virtio_mmio_init(&t, &vm, BASE, 5, &cfg), -EINVAL);
	ops = fake_ops;
	cfg.nqueues = VIRTIO_MMIO_MAX_QUEUES + 1;
	assert_int_equal(virtio_mmio_init(&t, &vm, BASE, 5, &cfg), -EINVAL);
	cfg.nqueues = 1;
	assert_int_equal(virtio_mmio_init(&t, &vm, BASE + 8, 5, &cfg), -EINVAL);
}

/* A snapshot of the transport: saved and set back exactly, with no device op called; a state
 * the transport could never have reached is refused whole. */
static void test_save_restore(void **state)
{
	struct fixture *fx = *state;
	struct virtio_mmio_state st, bad;

	negotiate(fx, 1ull | 1ull << VIRTIO_F_VERSION_1);
	setup_queue(fx, 1, 16, 0x1000);
	wr(fx, VIRTIO_MMIO_STATUS, S_FOK | VIRTIO_CONFIG_S_DRIVER_OK);
	virtio_mmio_save(&fx->t, &st);
	assert_int_equal(st.status, S_FOK | VIRTIO_CONFIG_S_DRIVER_OK);
	assert_int_equal(st.q[1].ready, 1);
	assert_int_equal(st.q[1].num, 16);
	unsigned calls = fx->dev.driver_ok_calls;
	wr(fx, VIRTIO_MMIO_STATUS, 0); /* reset: everything gone */
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(virtio_mmio_restore(&fx->t, &st), 0);
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_FOK | VIRTIO_CONFIG_S_DRIVER_OK);
	wr(fx, VIRTIO_MMIO_QUEUE_SEL, 1);
	assert_int_equal(rd(fx, VIRTIO_MMIO_QUEUE_READY), 1);
	assert_int_equal(fx->dev.driver_ok_calls, calls); /* the restorer starts the device */

	/* Each of these alone makes the state one no driver could have reached. */
	bad = st;
	bad.status = VIRTIO_CONFIG_S_DRIVER_OK | VIRTIO_CONFIG_S_ACKNOWLEDGE;
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.status |= 0x100;
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.driver_features |= 1ull << 38; /* hidden from the driver */
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.driver_features &= ~(1ull << VIRTIO_F_VERSION_1);
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.q[1].desc = (1 << 20) - 8; /* a ring past the end of RAM */
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.q[1].num = 24; /* not a power of two */
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.q[5] = bad.q[1]; /* a queue the device does not have */
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.q[1].ready = 2;
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.isr = 4;
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st; /* NEEDS_RESET with no driver; an interrupt before DRIVER_OK */
	bad.status = VIRTIO_CONFIG_S_NEEDS_RESET;
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st;
	bad.status = S_FOK;
	bad.isr = 1;
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	bad = st; /* a queue the device does not have, with fields set */
	bad.q[5].num = 7;
	assert_int_equal(virtio_mmio_restore(&fx->t, &bad), -EINVAL);
	/* Refused whole: the transport is as the good restore left it. */
	assert_int_equal(rd(fx, VIRTIO_MMIO_STATUS), S_FOK | VIRTIO_CONFIG_S_DRIVER_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_feature_negotiation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_before_features_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_ok_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_accesses, setup, teardown),
		cmocka_unit_test(test_incomplete_ops_refused),
		cmocka_unit_test_setup_teardown(test_save_restore, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
