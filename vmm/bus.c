/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/bus.c: a small table lookup; devices are few, so linear search is the fast path. */
#include "vmm/bus.h"

#include <errno.h>
#include <string.h>

void bus_init(struct bus *bus, const char *name)
{
	memset(bus, 0, sizeof(*bus));
	bus->name = name;
}

int bus_register(struct bus *bus, uint64_t base, uint64_t len, const struct bus_ops *ops,
		 void *opaque, const char *name)
{
	if (len == 0 || base + len < base || !ops || !ops->access)
		return -EINVAL;
	for (unsigned i = 0; i < bus->ndevs; i++) {
		const struct bus_dev *d = &bus->devs[i];
		if (base < d->base + d->len && d->base < base + len)
			return -EINVAL;
	}
	if (bus->ndevs >= BUS_MAX_DEVS)
		return -ENOSPC;
	bus->devs[bus->ndevs++] = (struct bus_dev){ base, len, ops, opaque, name };
	return 0;
}

void bus_access(struct bus *bus, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	if (size >= 1 && size <= 8) {
		for (unsigned i = 0; i < bus->ndevs; i++) {
			const struct bus_dev *d = &bus->devs[i];
			if (addr < d->base || size > d->len || addr - d->base > d->len - size)
				continue;
			if (!is_write)
				memset(data, 0xff, size);
			d->ops->access(d->opaque, addr - d->base, is_write, data, size);
			return;
		}
	}
	if (is_write) {
		bus->unknown_writes++;
	} else {
		bus->unknown_reads++;
		/* What a real bus returns when nobody answers. */
		memset(data, 0xff, size > 8 ? 8 : size);
	}
}
