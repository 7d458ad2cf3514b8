/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_bus.c: I/O dispatch — unknown accesses read all-ones and are counted,
 * devices only ever see in-range offsets, overlapping registrations are refused. */
#include "vmm/bus.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

struct fake {
	unsigned calls;
	uint64_t last_addr;
	unsigned last_size;
	bool last_write;
};

static void fake_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	struct fake *f = opaque;
	f->calls++;
	f->last_addr = addr;
	f->last_size = size;
	f->last_write = is_write;
	if (!is_write)
		memset(data, 0x5a, size);
}

static const struct bus_ops fake_ops = { fake_access };

static void test_dispatch_and_unknown(void **state)
{
	(void)state;
	struct bus bus;
	struct fake f = { 0 };
	uint8_t d[8];

	bus_init(&bus, "test");
	assert_int_equal(bus_register(&bus, 0x100, 8, &fake_ops, &f, "fake"), 0);

	bus_access(&bus, 0x104, false, d, 4);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.last_addr, 4);
	assert_int_equal(d[0], 0x5a);

	bus_access(&bus, 0x107, true, d, 1); /* last byte */
	assert_int_equal(f.calls, 2);
	assert_int_equal(f.last_addr, 7);

	/* Straddling the device's end: the device never sees an out-of-range offset. */
	memset(d, 0, sizeof(d));
	bus_access(&bus, 0x106, false, d, 4);
	assert_int_equal(f.calls, 2);
	assert_int_equal(bus.unknown_reads, 1);
	assert_int_equal(d[0] & d[1] & d[2] & d[3], 0xff);

	bus_access(&bus, UINT64_MAX, false, d, 8); /* would wrap */
	bus_access(&bus, 0x200, true, d, 2);
	bus_access(&bus, 0x100, false, d, 0); /* bad size */
	assert_int_equal(f.calls, 2);
	assert_int_equal(bus.unknown_reads, 3);
	assert_int_equal(bus.unknown_writes, 1);
}

static void test_register_refusals(void **state)
{
	(void)state;
	struct bus bus;
	struct fake f = { 0 };
	const struct bus_ops none = { NULL };

	bus_init(&bus, "test");
	assert_int_equal(bus_register(&bus, 0x100, 0, &fake_ops, &f, "empty"), -EINVAL);
	assert_int_equal(bus_register(&bus, UINT64_MAX - 1, 4, &fake_ops, &f, "wraps"), -EINVAL);
	assert_int_equal(bus_register(&bus, 0x100, 4, &none, &f, "no callback"), -EINVAL);
	assert_int_equal(bus_register(&bus, 0x100, 8, &fake_ops, &f, "a"), 0);
	assert_int_equal(bus_register(&bus, 0x107, 1, &fake_ops, &f, "b"), -EINVAL);
	assert_int_equal(bus_register(&bus, 0xfc, 8, &fake_ops, &f, "c"), -EINVAL);
	assert_int_equal(bus_register(&bus, 0x108, 1, &fake_ops, &f, "adjacent"), 0);
	for (unsigned i = 2; i < BUS_MAX_DEVS; i++)
		assert_int_equal(bus_register(&bus, 0x1000 + i * 16, 16, &fake_ops, &f, "fill"), 0);
	assert_int_equal(bus_register(&bus, 0x9000, 1, &fake_ops, &f, "full"), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatch_and_unknown),
		cmocka_unit_test(test_register_refusals),
	};
	return cmocka_run_group_tests_name("vmm_bus", tests, NULL, NULL);
}
