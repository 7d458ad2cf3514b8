/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/gdt.c: encode the boot GDT once, and derive segment registers from it. */
#include "vmm/x86/gdt.h"

#include <string.h>

uint64_t x86_gdt_entry(uint8_t access, uint8_t flags, uint32_t base, uint32_t limit)
{
	return ((uint64_t)(base & 0xff000000u) << 32) | ((uint64_t)(flags & 0xf) << 52) |
	       ((uint64_t)((limit >> 16) & 0xf) << 48) | ((uint64_t)access << 40) |
	       ((uint64_t)(base & 0x00ffffffu) << 16) | (uint64_t)(limit & 0xffff);
}

void x86_gdt_build(uint64_t gdt[X86_GDT_ENTRIES], uint64_t tss_base)
{
	memset(gdt, 0, X86_GDT_ENTRIES * sizeof(gdt[0]));
	/* flags 0xa: G=1, L=1 (64-bit code); 0xc: G=1, D/B=1 (32-bit code, flat data). */
	gdt[X86_SEL_KCODE >> 3] = x86_gdt_entry(0x9b, 0xa, 0, 0xfffff);
	gdt[X86_SEL_KDATA >> 3] = x86_gdt_entry(0x93, 0xc, 0, 0xfffff);
	gdt[X86_SEL_UCODE32 >> 3] = x86_gdt_entry(0xfb, 0xc, 0, 0xfffff);
	gdt[X86_SEL_UDATA >> 3] = x86_gdt_entry(0xf3, 0xc, 0, 0xfffff);
	gdt[X86_SEL_UCODE64 >> 3] = x86_gdt_entry(0xfb, 0xa, 0, 0xfffff);
	/* 64-bit TSS, marked busy (type 0xb) because we hand it to the vCPU already loaded. */
	gdt[X86_SEL_TSS >> 3] = x86_gdt_entry(0x8b, 0x0, (uint32_t)tss_base, 0x67);
	gdt[(X86_SEL_TSS >> 3) + 1] = tss_base >> 32;
}

void x86_gdt_segment(const uint64_t gdt[X86_GDT_ENTRIES], uint16_t selector,
		     struct kvm_segment *seg)
{
	unsigned idx = selector >> 3;
	uint64_t e = idx < X86_GDT_ENTRIES ? gdt[idx] : 0;
	uint32_t limit = (uint32_t)((e & 0xffff) | ((e >> 32) & 0xf0000));

	memset(seg, 0, sizeof(*seg));
	seg->base = ((e >> 16) & 0xffffff) | ((e >> 32) & 0xff000000);
	seg->g = (e >> 55) & 1;
	/* The CPU's cached limit is in bytes: a page-granular limit covers whole pages. */
	seg->limit = seg->g ? (limit << 12) | 0xfff : limit;
	seg->selector = selector;
	seg->type = (e >> 40) & 0xf;
	seg->s = (e >> 44) & 1;
	seg->dpl = (e >> 45) & 3;
	seg->present = (e >> 47) & 1;
	seg->avl = (e >> 52) & 1;
	seg->l = (e >> 53) & 1;
	seg->db = (e >> 54) & 1;
	seg->unusable = !seg->present;
	/* A system descriptor's upper half carries base[63:32]. */
	if (!seg->s && idx + 1 < X86_GDT_ENTRIES)
		seg->base |= gdt[idx + 1] << 32;
}
