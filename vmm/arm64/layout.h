/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/layout.h: the arm64 machine's physical map — devices below 1 GiB, RAM from 2 GiB
 * (as Firecracker's; QEMU's virt machine puts its devices at the same low addresses). The
 * device tree (vmm/arm64/fdt.h) tells the guest all of it; nothing else does. */
#ifndef BULKHEAD_VMM_ARM64_LAYOUT_H
#define BULKHEAD_VMM_ARM64_LAYOUT_H

#define ARM64_GIC_DIST_BASE    0x08000000ULL /* GICv3 and GICv2 distributor, 64 KiB */
#define ARM64_GIC_DIST_SIZE    0x00010000ULL
#define ARM64_GIC_CPU_BASE     0x08010000ULL /* GICv2 CPU interface, 8 KiB */
#define ARM64_GIC_CPU_SIZE     0x00002000ULL
#define ARM64_GIC_REDIST_BASE  0x080a0000ULL /* GICv3 redistributors, 128 KiB per vCPU */
#define ARM64_GIC_REDIST_SIZE  0x00020000ULL
#define ARM64_GIC_REDIST_LIMIT 0x09000000ULL /* 123 vCPUs' redistributors fit below */
#define ARM64_UART_BASE	       0x09000000ULL /* 8250, byte registers, as x86's COM1 */
#define ARM64_UART_SIZE	       0x00001000ULL
#define ARM64_UART_SPI	       0	     /* its interrupt: SPI 0 (INTID 32) */
#define ARM64_VIRTIO_BASE      0x0a000000ULL /* virtio-mmio transports, one per slot */
#define ARM64_VIRTIO_SLOT      0x00001000ULL /* one transport window (vmm/virtio/mmio.h) */
#define ARM64_VIRTIO_SPI       16 /* slot i raises SPI 16 + i */
#define ARM64_VIRTIO_MAX       32
#define ARM64_RAM_BASE	       0x80000000ULL
#define ARM64_RAM_MAX	       (64ULL << 30) /* within a 40-bit IPA space, KVM's default */

#define ARM64_SPI_BASE 32 /* INTID of SPI 0 */
#define ARM64_PPI_BASE 16 /* INTID of PPI 0 */

/* The architected timer's PPIs, as PPI numbers (INTID = 16 + n; the arm,armv8-timer binding's
 * order: secure, non-secure physical, virtual, hypervisor). KVM gives the guest the virtual
 * one. */
#define ARM64_TIMER_PPI_SEC  13
#define ARM64_TIMER_PPI_PHYS 14
#define ARM64_TIMER_PPI_VIRT 11
#define ARM64_TIMER_PPI_HYP  10

#endif
