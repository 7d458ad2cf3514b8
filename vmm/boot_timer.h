/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/boot_timer.h: the boot-timer port (lib/boot_timer_abi.h) — timestamps the guest's
 * "init started" write against VM creation and the first KVM_RUN. */
#ifndef BULKHEAD_VMM_BOOT_TIMER_H
#define BULKHEAD_VMM_BOOT_TIMER_H

#include "vmm/vm.h"

#include <stdint.h>

struct boot_timer {
	struct vm *vm;
	uint64_t main_ns; /* when bulkhead-vmm's main() began */
	uint64_t init_ns; /* 0 until the guest writes the magic byte */
};

/* Registers the port. Set-up tier. */
int boot_timer_init(struct boot_timer *bt, struct vm *vm, uint64_t main_ns);

#endif
