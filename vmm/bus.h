/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/bus.h: port-I/O and MMIO dispatch — devices register address ranges; accesses that
 * hit no device are counted and read as all-ones, never fatal (a guest may probe anything). */
#ifndef BULKHEAD_VMM_BUS_H
#define BULKHEAD_VMM_BUS_H

#include <stdbool.h>
#include <stdint.h>

#define BUS_MAX_DEVS 16

/* One callback per device: addr is relative to the device's base; size is 1, 2, 4 or 8.
 * On reads the callback fills data[0..size) (pre-filled with 0xff). */
struct bus_ops {
	void (*access)(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size);
};

struct bus_dev {
	uint64_t base, len;
	const struct bus_ops *ops;
	void *opaque;
	const char *name;
};

struct bus {
	const char *name; /* "port", "MMIO": for messages */
	unsigned ndevs;
	struct bus_dev devs[BUS_MAX_DEVS];
	uint64_t unknown_reads, unknown_writes;
};

void bus_init(struct bus *bus, const char *name);

/* Returns 0, -EINVAL for an empty, wrapping or overlapping range (or missing callback),
 * -ENOSPC when the table is full. */
int bus_register(struct bus *bus, uint64_t base, uint64_t len, const struct bus_ops *ops,
		 void *opaque, const char *name);

/* Dispatches one access of `size` bytes (1..8) at addr. Accesses that straddle a device's
 * end are treated as unknown: a device only ever sees in-range offsets. */
void bus_access(struct bus *bus, uint64_t addr, bool is_write, uint8_t *data, unsigned size);

#endif
