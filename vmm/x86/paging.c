/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/paging.c: 4-level paging, just enough to enter long mode and to read back. */
#include "vmm/x86/paging.h"

#include <errno.h>
#include <string.h>

#define PAGE 4096ULL
#define GIB  (1ULL << 30)
#define MIB2 (2ULL << 20)

uint64_t x86_paging_identity_size(unsigned gib)
{
	return (2 + (uint64_t)gib) * PAGE;
}

int x86_paging_identity(const struct gmem *gm, uint64_t pml4_gpa, unsigned gib)
{
	if (gib < 1 || gib > 512 || pml4_gpa % PAGE)
		return -EINVAL;
	uint64_t *pml4 = gmem_ptr(gm, pml4_gpa, x86_paging_identity_size(gib));
	if (!pml4)
		return -EFAULT;
	uint64_t *pdpt = pml4 + 512, *pd = pdpt + 512;
	uint64_t pdpt_gpa = pml4_gpa + PAGE, pd_gpa = pdpt_gpa + PAGE;
	/* U/S on every level: test probes drop to ring 3 on these tables; Linux replaces them
	 * long before its user space exists. */
	const uint64_t flags = X86_PTE_P | X86_PTE_RW | X86_PTE_US;

	memset(pml4, 0, x86_paging_identity_size(gib));
	pml4[0] = pdpt_gpa | flags;
	for (unsigned g = 0; g < gib; g++) {
		pdpt[g] = (pd_gpa + g * PAGE) | flags;
		for (unsigned i = 0; i < 512; i++)
			pd[g * 512 + i] = (g * GIB + i * MIB2) | flags | X86_PTE_PS;
	}
	return 0;
}

static int read_entry(const struct gmem *gm, uint64_t table, unsigned idx, uint64_t *e)
{
	const uint64_t *p = gmem_ptr(gm, (table & X86_PTE_ADDR) + idx * 8ULL, 8);
	if (!p)
		return -EFAULT;
	*e = *p;
	return (*e & X86_PTE_P) ? 0 : -ENOENT;
}

int x86_paging_translate(const struct gmem *gm, uint64_t cr3, uint64_t va, uint64_t *pa)
{
	uint64_t e;
	int r;

	/* Bits 63..47 must all equal bit 47 (48-bit virtual addresses, no LA57). */
	uint64_t top = va >> 47;
	if (top != 0 && top != 0x1ffff)
		return -EINVAL;
	if ((r = read_entry(gm, cr3, (va >> 39) & 511, &e)))
		return r;
	if ((r = read_entry(gm, e, (va >> 30) & 511, &e)))
		return r;
	if (e & X86_PTE_PS) {
		*pa = (e & X86_PTE_ADDR & ~(GIB - 1)) | (va & (GIB - 1));
		return 0;
	}
	if ((r = read_entry(gm, e, (va >> 21) & 511, &e)))
		return r;
	if (e & X86_PTE_PS) {
		*pa = (e & X86_PTE_ADDR & ~(MIB2 - 1)) | (va & (MIB2 - 1));
		return 0;
	}
	if ((r = read_entry(gm, e, (va >> 12) & 511, &e)))
		return r;
	*pa = (e & X86_PTE_ADDR) | (va & (PAGE - 1));
	return 0;
}
