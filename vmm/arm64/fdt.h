/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/fdt.h: the arm64 guest's device tree, written with libfdt — the one description
 * of the machine the guest gets (vmm/arm64/layout.h): RAM, the vCPUs and PSCI, the GIC, the
 * architected timer, the 8250 UART, each virtio-mmio slot with its SPI, and /chosen (the
 * command line, the initrd, the console). Built from values the VMM chose, never the guest's;
 * each is still checked, and a tree that would not fit its buffer is refused, not cut. */
#ifndef BULKHEAD_VMM_ARM64_FDT_H
#define BULKHEAD_VMM_ARM64_FDT_H

#include <stddef.h>
#include <stdint.h>

#define ARM64_FDT_MAX	      (2u << 20) /* Linux's limit for a DTB (booting.rst) */
#define ARM64_CMDLINE_MAX     2048	 /* arm64's COMMAND_LINE_SIZE, its NUL included */
#define ARM64_GICV2_MAX_CPUS  8
#define ARM64_FDT_GIC_PHANDLE 1

struct arm64_dt {
	uint64_t ram_base, ram_size;
	unsigned ncpus;
	unsigned gic_version;		    /* 3, or 2 where the host has no GICv3 */
	uint64_t initrd_start, initrd_size; /* size 0: none */
	const char *bootargs;
	unsigned nvirtio; /* virtio-mmio slots 0 .. nvirtio-1 */
};

/* Writes the tree into buf (cap bytes). Returns its size, or -errno with one line in err:
 * -EINVAL for a value out of range (named), -ENOSPC when it does not fit. */
int arm64_fdt_build(const struct arm64_dt *d, void *buf, size_t cap, char *err, size_t errlen);

/* The MPIDR affinity KVM gives vCPU i (Aff0: the low 4 bits, Aff1: the rest), which is its
 * cpu node's reg and what PSCI CPU_ON names it by. */
uint64_t arm64_mpidr(unsigned i);

#endif
