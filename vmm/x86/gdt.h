/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/gdt.h: the boot GDT — descriptor encoding, and decoding into KVM segment state so
 * the registers we load always agree with the table the guest can read. */
#ifndef BULKHEAD_VMM_X86_GDT_H
#define BULKHEAD_VMM_X86_GDT_H

#include <linux/kvm.h>
#include <stdint.h>

/* Selectors. SYSCALL loads CS=0x08/SS=0x10 from STAR[47:32]=0x08; SYSRET to 64-bit code
 * loads CS=0x28|3/SS=0x20|3 from STAR[63:48]=0x18, hence this order. */
#define X86_SEL_KCODE	0x08
#define X86_SEL_KDATA	0x10
#define X86_SEL_UCODE32 0x18
#define X86_SEL_UDATA	0x20
#define X86_SEL_UCODE64 0x28
#define X86_SEL_TSS	0x30 /* 16-byte system descriptor: two slots */
#define X86_GDT_ENTRIES 8

/* access: P|DPL|S|type byte; flags: the G|D/B|L|AVL nibble. limit is 20 bits. */
uint64_t x86_gdt_entry(uint8_t access, uint8_t flags, uint32_t base, uint32_t limit);

/* Fills gdt[X86_GDT_ENTRIES] with the boot table; tss_base is the TSS's guest address. */
void x86_gdt_build(uint64_t gdt[X86_GDT_ENTRIES], uint64_t tss_base);

/* KVM segment state equal to what loading `selector` from `gdt` would give the CPU. */
void x86_gdt_segment(const uint64_t gdt[X86_GDT_ENTRIES], uint16_t selector,
		     struct kvm_segment *seg);

#endif
