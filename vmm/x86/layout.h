/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/layout.h: where bulkhead-vmm puts its boot structures in guest-physical memory
 * (all below 1 MiB, clear of the loaded image at 1 MiB and above) and where devices live. */
#ifndef BULKHEAD_VMM_X86_LAYOUT_H
#define BULKHEAD_VMM_X86_LAYOUT_H

#define X86_GDT_GPA	 0x500	 /* boot GDT, X86_GDT_ENTRIES * 8 bytes */
#define X86_TSS_GPA	 0x600	 /* the 104-byte 64-bit TSS the boot TR points at */
#define X86_PML4_GPA	 0x1000	 /* identity map: PML4, PDPT, then X86_IDMAP_GIB page directories */
#define X86_IDMAP_GIB	 4	 /* identity-mapped span: the first 4 GiB (RAM and MMIO hole) */
#define X86_PT_END	 0x7000	 /* first byte after the page tables */
#define X86_ZEROPAGE_GPA 0x7000	 /* Linux boot_params, one page; RSI at entry */
#define X86_BOOT_STACK	 0x8ff0	 /* initial RSP for Linux (it moves to its own at once) */
#define X86_CMDLINE_GPA	 0x20000 /* kernel command line, X86_CMDLINE_MAX bytes */
#define X86_MPTABLE_GPA	 0x9fc00 /* last KiB of base memory: where Linux looks for "_MP_" */
#define X86_LOW_RAM_END	 0x9fc00 /* e820: RAM below, reserved from here to 1 MiB */
#define X86_HIGH_RAM_GPA 0x100000

/* KVM wants these outside RAM and below 4 GiB (VMX real-mode emulation uses them): the
 * three TSS pages end where the identity-map page begins, all under the 4 GiB line. */
#define X86_KVM_IDENTITY_MAP_GPA 0xfffbc000ULL
#define X86_KVM_TSS_GPA		 0xfffbd000ULL

/* Guest RAM must end below here so it never overlaps the KVM pages or the MMIO hole. */
#define X86_RAM_MAX_BELOW_4G 0xc0000000ULL

/* The MMIO hole: [X86_MMIO_HOLE_GPA, 4 GiB) is never RAM and is left out of e820. virtio-mmio
 * devices get X86_VIRTIO_MMIO_SIZE windows from X86_VIRTIO_MMIO_GPA up (vmm/virtio/), with
 * GSIs from X86_VIRTIO_GSI_BASE up; the top holds the IOAPIC (0xfec00000), the KVM pages,
 * the test-guest window (0xfe000000) and the LAPIC (0xfee00000). */
#define X86_MMIO_HOLE_GPA    0xc0000000ULL
#define X86_VIRTIO_MMIO_GPA  0xd0000000ULL
#define X86_VIRTIO_MMIO_SIZE 0x1000ULL
#define X86_VIRTIO_MMIO_MAX  64 /* windows: up to 0xd0040000 */
#define X86_VIRTIO_GSI_BASE  5	/* GSIs 5..23 (IOAPIC pins; 0-4 are PIT, i8042, cascade, UART) */
#define X86_IOAPIC_GPA	     0xfec00000ULL
#define X86_LAPIC_GPA	     0xfee00000ULL

/* Legacy devices. */
#define X86_UART_PORT	    0x3f8
#define X86_UART_GSI	    4
#define X86_I8042_DATA_PORT 0x60
#define X86_I8042_CMD_PORT  0x64

#endif
