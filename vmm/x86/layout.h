/* vmm/x86/layout.h: where bulkhead-vmm puts its boot structures in guest-physical memory.
 * All below 1 MiB, clear of the loaded image at 1 MiB; Linux's zero page will use 0x7000. */
#ifndef BULKHEAD_VMM_X86_LAYOUT_H
#define BULKHEAD_VMM_X86_LAYOUT_H

#define X86_GDT_GPA   0x500  /* boot GDT, X86_GDT_ENTRIES * 8 bytes */
#define X86_TSS_GPA   0x600  /* the 104-byte 64-bit TSS the boot TR points at */
#define X86_PML4_GPA  0x1000 /* identity map: PML4, PDPT, then X86_IDMAP_GIB page directories */
#define X86_IDMAP_GIB 4	     /* identity-mapped span: the first 4 GiB (RAM and MMIO hole) */
#define X86_PT_END    0x7000 /* first byte after the page tables */

/* KVM wants these outside RAM and below 4 GiB (VMX real-mode emulation uses them): the
 * three TSS pages end where the identity-map page begins, all under the 4 GiB line. */
#define X86_KVM_IDENTITY_MAP_GPA 0xfffbc000ULL
#define X86_KVM_TSS_GPA		 0xfffbd000ULL

/* Guest RAM must end below here so it never overlaps the KVM pages or the MMIO hole. */
#define X86_RAM_MAX_BELOW_4G 0xc0000000ULL

#endif
