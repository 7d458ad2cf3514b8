/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/machine_arch.h: what vmm/main.c asks of the architecture (vmm/x86/machine_arch.c,
 * vmm/arm64/machine_arch.c): the devices only it has, where the shared ones go, the VM's
 * flags, and the boot (images into RAM, vCPUs created and set to start). */
#ifndef BULKHEAD_VMM_MACHINE_ARCH_H
#define BULKHEAD_VMM_MACHINE_ARCH_H

#include "vmm/machine.h"

#include <stdbool.h>
#include <stdint.h>

/* The architecture's own rows of the device table (main.c initialises them before its own). */
extern const struct vmm_device machine_arch_devices[];
extern const unsigned machine_arch_ndevices;

/* VM_* for vm_create() in this run's mode. */
unsigned machine_arch_vm_flags(const struct vmm_opts *o);

/* The console UART on this architecture's bus, address and interrupt. Set-up tier. */
int machine_arch_uart_init(struct machine *m);

/* Where the virtio-mmio transports go: the first window, how many, the first GSI; and whether
 * the kernel learns of them from its command line (x86) or from the device tree (arm64). */
struct machine_arch_virtio {
	uint64_t base;
	unsigned max, gsi_base;
	bool on_cmdline;
};
extern const struct machine_arch_virtio machine_arch_virtio;

/* A booting run (not a restore): loads the kernel or test guest, the initrd and the boot
 * data into RAM, closes the image descriptors, and has every vCPU (m->nvcpus counts them)
 * ready to start: created here on x86, by the GIC's row on arm64. Set-up tier: one line on
 * failure, -errno. */
int machine_arch_boot(struct machine *m);

#endif
