/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_x86.c: the boot GDT and identity map — the invariants SYSCALL/SYSRET
 * and long-mode entry rely on, and the page walker used for fault reports. */
#include "vmm/gmem.h"
#include "vmm/x86/gdt.h"
#include "vmm/x86/layout.h"
#include "vmm/x86/paging.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

static void test_gdt_entry_roundtrip(void **state)
{
	(void)state;
	uint64_t gdt[X86_GDT_ENTRIES] = { 0 };
	struct kvm_segment s;

	/* Byte-granular, odd base and limit: every field lands where the SDM puts it. */
	gdt[1] = x86_gdt_entry(0x93, 0x4, 0x12345678, 0xabcde);
	assert_int_equal(gdt[1], 0x124a93345678bcdeULL);
	x86_gdt_segment(gdt, 0x08, &s);
	assert_int_equal(s.base, 0x12345678);
	assert_int_equal(s.limit, 0xabcde);
	assert_int_equal(s.g, 0);
	assert_int_equal(s.db, 1);
	assert_int_equal(s.type, 3);
	assert_int_equal(s.present, 1);
	assert_int_equal(s.unusable, 0);
	/* An index past the table decodes as unusable, not as garbage. */
	x86_gdt_segment(gdt, 0x100, &s);
	assert_int_equal(s.present, 0);
	assert_int_equal(s.unusable, 1);
}

static void test_gdt_boot_table(void **state)
{
	(void)state;
	uint64_t gdt[X86_GDT_ENTRIES];
	struct kvm_segment s;
	const uint64_t tss = 0x123456789000ULL; /* above 4 GiB: exercises the upper half */

	x86_gdt_build(gdt, tss);
	assert_int_equal(gdt[0], 0);

	x86_gdt_segment(gdt, X86_SEL_KCODE, &s);
	assert_true(s.present && s.s && s.l && !s.db);
	assert_int_equal(s.dpl, 0);
	assert_int_equal(s.type, 0xb);
	assert_int_equal(s.base, 0);
	assert_int_equal(s.limit, 0xffffffff);

	x86_gdt_segment(gdt, X86_SEL_KDATA, &s);
	assert_true(s.present && s.s && s.db && !s.l);
	assert_int_equal(s.dpl, 0);
	assert_int_equal(s.type, 0x3);

	x86_gdt_segment(gdt, X86_SEL_UCODE64, &s);
	assert_true(s.present && s.l);
	assert_int_equal(s.dpl, 3);
	assert_int_equal(s.type & 0x8, 0x8); /* code */

	x86_gdt_segment(gdt, X86_SEL_UDATA, &s);
	assert_int_equal(s.dpl, 3);
	assert_int_equal(s.type & 0x8, 0); /* data */

	x86_gdt_segment(gdt, X86_SEL_TSS, &s);
	assert_true(s.present && !s.s);
	assert_int_equal(s.type, 0xb); /* busy 64-bit TSS, as KVM wants TR */
	assert_int_equal(s.base, tss);
	assert_int_equal(s.limit, 0x67);

	/* SYSCALL: SS = STAR.CS + 8. SYSRETQ: SS = base + 8, CS = base + 16. */
	assert_int_equal(X86_SEL_KDATA, X86_SEL_KCODE + 8);
	assert_int_equal(X86_SEL_UDATA, X86_SEL_UCODE32 + 8);
	assert_int_equal(X86_SEL_UCODE64, X86_SEL_UCODE32 + 16);
	assert_true((X86_SEL_TSS >> 3) + 1 < X86_GDT_ENTRIES);
}

static void test_layout_fits(void **state)
{
	(void)state;
	assert_true(X86_GDT_GPA + X86_GDT_ENTRIES * 8 <= X86_TSS_GPA);
	assert_true(X86_PML4_GPA + x86_paging_identity_size(X86_IDMAP_GIB) <= X86_PT_END);
	assert_true(X86_KVM_IDENTITY_MAP_GPA + 0x1000 <= X86_KVM_TSS_GPA);
	assert_true(X86_KVM_TSS_GPA + 3 * 0x1000 <= (1ULL << 32));
	assert_true(X86_RAM_MAX_BELOW_4G <= X86_KVM_IDENTITY_MAP_GPA);
}

static void test_identity_map(void **state)
{
	(void)state;
	struct gmem gm;
	uint64_t pa;

	assert_int_equal(gmem_init(&gm, 2 << 20), 0);
	assert_int_equal(gmem_add_region(&gm, 0, 0, 2 << 20), 0);
	assert_int_equal(x86_paging_identity(&gm, X86_PML4_GPA, X86_IDMAP_GIB), 0);

	const uint64_t probes[] = { 0,		0x1234567,	 0x100000, (1ULL << 30) + 0x2345,
				    0xfe000010, (4ULL << 30) - 1 };
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		pa = 0xdead;
		assert_int_equal(x86_paging_translate(&gm, X86_PML4_GPA, probes[i], &pa), 0);
		assert_int_equal(pa, probes[i]);
	}
	/* Just past the map, and non-canonical. */
	assert_int_equal(x86_paging_translate(&gm, X86_PML4_GPA, 4ULL << 30, &pa), -ENOENT);
	assert_int_equal(x86_paging_translate(&gm, X86_PML4_GPA, 1ULL << 47, &pa), -EINVAL);
	/* A CR3 outside RAM (a hostile guest's) is refused, not followed. */
	assert_int_equal(x86_paging_translate(&gm, 0x7ffff000, 0, &pa), -EFAULT);

	/* Every 2 MiB entry: present, writable, user, large page. */
	const uint64_t *pd = gmem_ptr(&gm, X86_PML4_GPA + 2 * 4096, 8);
	assert_non_null(pd);
	assert_int_equal(pd[1] & 0xfff, X86_PTE_P | X86_PTE_RW | X86_PTE_US | X86_PTE_PS);

	assert_int_equal(x86_paging_identity(&gm, X86_PML4_GPA, 0), -EINVAL);
	assert_int_equal(x86_paging_identity(&gm, X86_PML4_GPA + 1, 1), -EINVAL);
	/* Tables that would run past the end of RAM. */
	assert_int_equal(x86_paging_identity(&gm, (2 << 20) - 4096, 1), -EFAULT);
	gmem_destroy(&gm);
}

/* Hand-built 4 KiB and 1 GiB mappings: the walker must handle what Linux builds, too. */
static void test_translate_small_and_huge(void **state)
{
	(void)state;
	struct gmem gm;
	uint64_t pa;
	const uint64_t f = X86_PTE_P | X86_PTE_RW;

	assert_int_equal(gmem_init(&gm, 1 << 20), 0);
	assert_int_equal(gmem_add_region(&gm, 0, 0, 1 << 20), 0);
	uint64_t *t = gmem_ptr(&gm, 0x10000, 5 * 4096);
	assert_non_null(t);
	/* PML4 0x10000 -> PDPT 0x11000 -> PD 0x12000 -> PT 0x13000; PDPT[1] is a 1 GiB page. */
	t[0] = 0x11000 | f;
	t[512 + 0] = 0x12000 | f;
	t[512 + 1] = (7ULL << 30) | f | X86_PTE_PS;
	t[1024 + 0] = 0x13000 | f;
	t[1536 + 5] = 0xabc000 | f;
	assert_int_equal(x86_paging_translate(&gm, 0x10000, 0x5123, &pa), 0);
	assert_int_equal(pa, 0xabc123);
	assert_int_equal(x86_paging_translate(&gm, 0x10000, (1ULL << 30) + 0x1234567, &pa), 0);
	assert_int_equal(pa, (7ULL << 30) + 0x1234567);
	assert_int_equal(x86_paging_translate(&gm, 0x10000, 0x6000, &pa), -ENOENT);
	/* A table pointer outside RAM. */
	t[1024 + 1] = 0x7000000000ULL | f;
	assert_int_equal(x86_paging_translate(&gm, 0x10000, 0x200000, &pa), -EFAULT);
	gmem_destroy(&gm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gdt_entry_roundtrip),
		cmocka_unit_test(test_gdt_boot_table),
		cmocka_unit_test(test_layout_fits),
		cmocka_unit_test(test_identity_map),
		cmocka_unit_test(test_translate_small_and_huge),
	};
	return cmocka_run_group_tests_name("vmm_x86", tests, NULL, NULL);
}
