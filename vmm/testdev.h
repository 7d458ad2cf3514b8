/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/testdev.h: the devices of --test-guest mode (lib/test_guest_abi.h): a write-only
 * serial sink, the exit port and the timestamp-mark port. Mapped in test mode only. */
#ifndef BULKHEAD_VMM_TESTDEV_H
#define BULKHEAD_VMM_TESTDEV_H

#include "lib/test_guest_abi.h"
#include "vmm/vm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct testdev_mark {
	uint32_t value;
	uint64_t ns; /* since vm->created_ns */
};

struct testdev {
	struct vm *vm;
	int out_fd; /* serial bytes go here (stdout) */
	size_t outlen;
	uint8_t outbuf[4096]; /* flushed at newline, when full and at the end */
	unsigned nmarks;
	uint64_t marks_dropped;
	struct testdev_mark marks[TG_MARKS_MAX];
};

/* Registers the devices on vm->pio and vm->mmio; the serial sink at 0x3f8 only when
 * with_serial (a machine with a real UART has it there instead). Set-up tier. */
int testdev_init(struct testdev *td, struct vm *vm, int out_fd, bool with_serial);

/* Flushes serial output and prints the marks (one "bulkhead-vmm: mark V NS" line each). */
void testdev_finish(struct testdev *td);

#endif
