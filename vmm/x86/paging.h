/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/paging.h: the boot identity map, and a page-table walker for diagnostics (both
 * touch guest memory only through gmem_ptr()). */
#ifndef BULKHEAD_VMM_X86_PAGING_H
#define BULKHEAD_VMM_X86_PAGING_H

#include "vmm/gmem.h"

#include <stdint.h>

#define X86_PTE_P    0x1ULL
#define X86_PTE_RW   0x2ULL
#define X86_PTE_US   0x4ULL
#define X86_PTE_PS   0x80ULL
#define X86_PTE_ADDR 0x000ffffffffff000ULL

/* Writes PML4 + PDPT + `gib` page directories at pml4_gpa (contiguous pages) mapping
 * VA == PA for [0, gib GiB) with 2 MiB pages, writable and user-accessible. Returns 0 (the
 * value for CR3 is pml4_gpa), -EINVAL for gib outside 1..512, -EFAULT if the tables do
 * not fit in RAM. */
int x86_paging_identity(const struct gmem *gm, uint64_t pml4_gpa, unsigned gib);

/* Bytes x86_paging_identity() writes for `gib`. */
uint64_t x86_paging_identity_size(unsigned gib);

/* Walks 4-level tables at cr3 (4 KiB, 2 MiB and 1 GiB pages) to translate va. Returns 0 with
 * *pa set, -ENOENT when not present, -EINVAL for a non-canonical va, -EFAULT when a table
 * lies outside RAM (a hostile or broken guest's CR3). */
int x86_paging_translate(const struct gmem *gm, uint64_t cr3, uint64_t va, uint64_t *pa);

#endif
