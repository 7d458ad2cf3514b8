/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_loader.c: the ELF and bzImage loaders and the zero page against
 * truncated, overlapping, out-of-RAM and oversized inputs: each refused with a clear error
 * and RAM left untouched, never a crash. Built images are synthetic and tiny. */
#include "vmm/gmem.h"
#include "vmm/loader.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/layout.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define RAM (8ULL << 20)

static struct gmem gm;
static char err[256];

static int setup(void **state)
{
	(void)state;
	if (gmem_init(&gm, RAM) || gmem_add_region(&gm, 0, 0, RAM))
		return -1;
	err[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gmem_destroy(&gm);
	return 0;
}

/* --- ELF ----------------------------------------------------------------------------- */

struct elf_img {
	Elf64_Ehdr eh;
	Elf64_Phdr ph[3];
	uint8_t payload[64];
};

/* Two PT_LOADs: 32 bytes at 2 MiB (+ 4 KiB bss), 16 bytes at 3 MiB; entry at 2 MiB + 4. */
static void elf_make(struct elf_img *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->eh.e_ident, ELFMAG, SELFMAG);
	e->eh.e_ident[EI_CLASS] = ELFCLASS64;
	e->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	e->eh.e_ident[EI_VERSION] = EV_CURRENT;
	e->eh.e_type = ET_EXEC;
	e->eh.e_machine = EM_X86_64;
	e->eh.e_version = EV_CURRENT;
	e->eh.e_entry = 0x200004;
	e->eh.e_phoff = offsetof(struct elf_img, ph);
	e->eh.e_phentsize = sizeof(Elf64_Phdr);
	e->eh.e_phnum = 3;
	e->ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD,
				 .p_offset = offsetof(struct elf_img, payload),
				 .p_paddr = 0x200000,
				 .p_filesz = 32,
				 .p_memsz = 32 + 4096 };
	e->ph[1] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = 0, .p_filesz = 8 };
	e->ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD,
				 .p_offset = offsetof(struct elf_img, payload) + 32,
				 .p_paddr = 0x300000,
				 .p_filesz = 16,
				 .p_memsz = 16 };
	for (unsigned i = 0; i < sizeof(e->payload); i++)
		e->payload[i] = (uint8_t)(i + 1);
}

static int elf_load(const struct elf_img *e, size_t len, struct loader_result *r)
{
	return loader_elf_load(&gm, (const uint8_t *)e, len, X86_HIGH_RAM_GPA, r, err, sizeof(err));
}

static int ram_untouched(void)
{
	const uint8_t *p = gmem_ptr(&gm, 0x200000, 0x200000);
	for (size_t i = 0; i < 0x200000; i++)
		if (p[i])
			return 0;
	return 1;
}

static void test_elf_good(void **state)
{
	(void)state;
	struct elf_img e;
	struct loader_result r;
	elf_make(&e);
	/* Garbage where the bss goes: the loader must zero it. */
	memset(gmem_ptr(&gm, 0x200020, 4096), 0xaa, 4096);
	assert_int_equal(elf_load(&e, sizeof(e), &r), 0);
	assert_int_equal(r.entry, 0x200004);
	assert_int_equal(r.start, 0x200000);
	assert_int_equal(r.end, 0x300010);
	const uint8_t *p = gmem_ptr(&gm, 0x200000, 32 + 4096);
	assert_int_equal(p[0], 1);
	assert_int_equal(p[31], 32);
	assert_int_equal(p[32], 0);
	assert_int_equal(p[32 + 4095], 0);
	assert_int_equal(*(const uint8_t *)gmem_ptr(&gm, 0x300000, 1), 33);
}

static void test_elf_truncated(void **state)
{
	(void)state;
	struct elf_img e;
	struct loader_result r;
	elf_make(&e);
	/* Every prefix that cuts into a segment's file bytes is refused; none loads a byte. */
	for (size_t len = 0; len < offsetof(struct elf_img, payload) + 48; len++) {
		memset(gmem_ptr(&gm, 0x200000, 0x200000), 0, 0x200000);
		int rc = elf_load(&e, len, &r);
		assert_int_equal(rc, -ENOEXEC);
		assert_true(err[0] != '\0');
		assert_true(ram_untouched());
	}
	assert_int_equal(elf_load(&e, 10, &r), -ENOEXEC);
	assert_non_null(strstr(err, "truncated"));
}

static void test_elf_bad_headers(void **state)
{
	(void)state;
	struct elf_img e;
	struct loader_result r;

	elf_make(&e);
	e.eh.e_machine = EM_AARCH64;
	assert_int_equal(elf_load(&e, sizeof(e), &r), -ENOEXEC);
	elf_make(&e);
	e.eh.e_phnum = 0;
	assert_int_equal(elf_load(&e, sizeof(e), &r), -ENOEXEC);
	elf_make(&e);
	e.eh.e_phnum = 1000; /* more headers than the file and the limit */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -ENOEXEC);
	elf_make(&e);
	e.eh.e_phoff = UINT64_MAX - 8; /* offset + size wraps */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -ENOEXEC);
	elf_make(&e);
	e.ph[0].p_offset = UINT64_MAX - 4; /* segment offset wraps */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -ENOEXEC);
	assert_non_null(strstr(err, "beyond the end"));
	elf_make(&e);
	e.ph[0].p_filesz = 64;
	e.ph[0].p_memsz = 32; /* file bytes > memory bytes */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -ENOEXEC);
	elf_make(&e);
	e.eh.e_entry = 0x300020; /* in no segment's file bytes */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -ENOEXEC);
	assert_non_null(strstr(err, "entry"));
	assert_true(ram_untouched());
}

static void test_elf_overlap(void **state)
{
	(void)state;
	struct elf_img e;
	struct loader_result r;
	elf_make(&e);
	e.ph[2].p_paddr = 0x200800; /* inside segment 0's bss */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -EINVAL);
	assert_non_null(strstr(err, "overlaps"));
	assert_true(ram_untouched());
}

static void test_elf_out_of_ram(void **state)
{
	(void)state;
	struct elf_img e;
	struct loader_result r;

	elf_make(&e);
	e.ph[2].p_paddr = RAM - 8; /* straddles the end of RAM */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -EFBIG);
	assert_non_null(strstr(err, "does not fit in guest RAM"));
	elf_make(&e);
	e.ph[2].p_paddr = UINT64_MAX - 4; /* address + size wraps */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -EFBIG);
	elf_make(&e);
	e.ph[2].p_memsz = 1ULL << 40; /* oversized */
	assert_int_equal(elf_load(&e, sizeof(e), &r), -EFBIG);
	elf_make(&e);
	e.ph[0].p_paddr = 0x7000; /* over the zero page */
	e.eh.e_entry = 0x7004;
	assert_int_equal(elf_load(&e, sizeof(e), &r), -EINVAL);
	assert_non_null(strstr(err, "below 1 MiB"));
	assert_true(ram_untouched());
	/* An image larger than the loader accepts is refused before it is even read. */
	assert_int_equal(loader_elf_load(&gm, (const uint8_t *)&e, LOADER_IMAGE_MAX + 1, 0, &r, err,
					 sizeof(err)),
			 -EFBIG);
}

/* --- bzImage ------------------------------------------------------------------------- */

#define BZ_SETUP_SECTS 3
#define BZ_SETUP_SIZE  ((BZ_SETUP_SECTS + 1) * 512)
#define BZ_PM_SIZE     4096
#define BZ_LEN	       (BZ_SETUP_SIZE + BZ_PM_SIZE)

static uint8_t *bz_make(void)
{
	uint8_t *img = calloc(1, BZ_LEN);
	struct setup_header h;
	memset(&h, 0, sizeof(h));
	h.setup_sects = BZ_SETUP_SECTS;
	h.boot_flag = 0xaa55;
	h.header = 0x53726448;
	h.version = 0x020f;
	h.loadflags = LOADED_HIGH;
	h.xloadflags = XLF_KERNEL_64;
	h.kernel_alignment = 0x200000;
	h.pref_address = 0x400000;
	h.init_size = 0x10000;
	h.initrd_addr_max = 0x7fffffff;
	h.cmdline_size = 2047;
	memcpy(img + 0x1f1, &h, sizeof(h));
	img[0x201] = (uint8_t)(0x1f1 + sizeof(h) - 0x202); /* header length after the jump */
	for (unsigned i = 0; i < BZ_PM_SIZE; i++)
		img[BZ_SETUP_SIZE + i] = (uint8_t)(i * 7 + 3);
	return img;
}

static struct setup_header *bz_hdr(uint8_t *img)
{
	return (struct setup_header *)(img + 0x1f1);
}

static void test_bz_good(void **state)
{
	(void)state;
	struct x86_kernel k;
	uint8_t *img = bz_make();
	assert_int_equal(x86_kernel_load(&gm, img, BZ_LEN, &k, err, sizeof(err)), 0);
	assert_true(k.has_hdr);
	assert_int_equal(k.img.entry, 0x400200);
	assert_int_equal(k.img.start, 0x400000);
	assert_int_equal(k.img.end, 0x410000); /* init_size, larger than the payload */
	assert_memory_equal(gmem_ptr(&gm, 0x400000, BZ_PM_SIZE), img + BZ_SETUP_SIZE, BZ_PM_SIZE);
	assert_int_equal(k.hdr.initrd_addr_max, 0x7fffffff);
	free(img);
}

static void test_bz_refusals(void **state)
{
	(void)state;
	struct x86_kernel k;
	uint8_t *img = bz_make();

	/* Truncated anywhere: inside the header, inside the setup, right after it. */
	size_t lens[] = { 0x1f1, 0x210, 0x250, BZ_SETUP_SIZE - 1, BZ_SETUP_SIZE };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		assert_int_equal(x86_bzimage_load(&gm, img, lens[i], &k, err, sizeof(err)),
				 -ENOEXEC);

	bz_hdr(img)->version = 0x020b;
	assert_int_equal(x86_bzimage_load(&gm, img, BZ_LEN, &k, err, sizeof(err)), -ENOEXEC);
	assert_non_null(strstr(err, "2.12"));
	free(img);

	img = bz_make();
	bz_hdr(img)->xloadflags = 0;
	assert_int_equal(x86_bzimage_load(&gm, img, BZ_LEN, &k, err, sizeof(err)), -ENOEXEC);
	free(img);

	img = bz_make();
	bz_hdr(img)->setup_sects = 200; /* setup larger than the file */
	assert_int_equal(x86_bzimage_load(&gm, img, BZ_LEN, &k, err, sizeof(err)), -ENOEXEC);
	assert_non_null(strstr(err, "truncated"));
	free(img);

	img = bz_make();
	bz_hdr(img)->init_size = RAM; /* decompression would run off the end of RAM */
	assert_int_equal(x86_bzimage_load(&gm, img, BZ_LEN, &k, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "beyond guest RAM"));
	free(img);

	img = bz_make();
	bz_hdr(img)->pref_address = 0x7000; /* over the boot structures */
	assert_int_equal(x86_bzimage_load(&gm, img, BZ_LEN, &k, err, sizeof(err)), -EINVAL);
	free(img);

	img = bz_make();
	bz_hdr(img)->pref_address = UINT64_MAX - 0x1000; /* wraps */
	assert_int_equal(x86_bzimage_load(&gm, img, BZ_LEN, &k, err, sizeof(err)), -EINVAL);
	free(img);

	img = bz_make();
	bz_hdr(img)->pref_address = 0x401000; /* not kernel_alignment-aligned */
	assert_int_equal(x86_bzimage_load(&gm, img, BZ_LEN, &k, err, sizeof(err)), -EINVAL);
	free(img);

	img = bz_make();
	img[0x201] = 0xff; /* header claims to run past the file's setup */
	assert_int_equal(x86_bzimage_load(&gm, img, 0x260, &k, err, sizeof(err)), -ENOEXEC);
	free(img);

	assert_true(ram_untouched());
	assert_int_equal(x86_bzimage_load(&gm, NULL, LOADER_IMAGE_MAX + 1, &k, err, sizeof(err)),
			 -EFBIG);
}

/* --- zero page, initrd placement, MP table --------------------------------------------- */

static void test_initrd_place(void **state)
{
	(void)state;
	uint64_t at;
	assert_int_equal(x86_initrd_place(64 << 20, 0x400000, 0x37ffffff, 5000, &at), 0);
	assert_int_equal(at, (64 << 20) - 8192); /* page-aligned, ends inside RAM */
	/* The limit below RAM's end wins. */
	assert_int_equal(x86_initrd_place(64 << 20, 0x400000, (32 << 20) - 1, 4096, &at), 0);
	assert_int_equal(at, (32 << 20) - 4096);
	/* Does not fit above the kernel; empty; larger than RAM; limit wraps. */
	assert_int_equal(x86_initrd_place(8 << 20, 7 << 20, UINT64_MAX, 2 << 20, &at), -ENOSPC);
	assert_int_equal(x86_initrd_place(8 << 20, 0, UINT64_MAX, 0, &at), -ENOSPC);
	assert_int_equal(x86_initrd_place(8 << 20, 0, UINT64_MAX, UINT64_MAX, &at), -ENOSPC);
}

static void test_boot_params(void **state)
{
	(void)state;
	struct x86_kernel k;
	struct loader_image rd = { (const uint8_t *)"RAMDISK!", 8 };
	const char long_line[] = "x";
	char big[X86_CMDLINE_MAX + 10];

	memset(&k, 0, sizeof(k));
	k.img.end = 0x400000;
	assert_int_equal(x86_boot_params_write(&gm, &k, "console=ttyS0", &rd, err, sizeof(err)), 0);
	const struct boot_params *zp = gmem_ptr(&gm, X86_ZEROPAGE_GPA, sizeof(*zp));
	assert_int_equal(zp->hdr.header, 0x53726448);
	assert_int_equal(zp->hdr.type_of_loader, 0xff);
	assert_int_equal(zp->hdr.cmd_line_ptr, X86_CMDLINE_GPA);
	assert_string_equal(gmem_ptr(&gm, X86_CMDLINE_GPA, 14), "console=ttyS0");
	assert_int_equal(zp->hdr.ramdisk_size, 8);
	assert_int_equal(zp->hdr.ramdisk_image, RAM - 4096);
	assert_memory_equal(gmem_ptr(&gm, RAM - 4096, 8), "RAMDISK!", 8);
	assert_int_equal(zp->e820_entries, 3);
	assert_int_equal(zp->e820_table[2].addr + zp->e820_table[2].size, RAM);

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(x86_boot_params_write(&gm, &k, big, NULL, err, sizeof(err)), -E2BIG);
	/* An initrd that cannot fit above the kernel. */
	k.img.end = RAM - 4096;
	struct loader_image huge = { (const uint8_t *)long_line, 2 << 20 };
	assert_int_equal(x86_boot_params_write(&gm, &k, "", &huge, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "initrd"));
}

static void test_mptable(void **state)
{
	(void)state;
	assert_int_equal(x86_mptable_write(&gm, 0), -EINVAL);
	assert_int_equal(x86_mptable_write(&gm, 33), -EINVAL);
	assert_int_equal(x86_mptable_write(&gm, 32), 0);
	const uint8_t *fp = gmem_ptr(&gm, X86_MPTABLE_GPA, 16);
	uint8_t sum = 0;
	for (int i = 0; i < 16; i++)
		sum = (uint8_t)(sum + fp[i]);
	assert_memory_equal(fp, "_MP_", 4);
	assert_int_equal(sum, 0);
	const uint8_t *cfg = gmem_ptr(&gm, *(const uint32_t *)(fp + 4), 44);
	uint16_t len = *(const uint16_t *)(cfg + 4);
	assert_true(X86_MPTABLE_GPA + 16 + len <= 0x100000);
	cfg = gmem_ptr(&gm, *(const uint32_t *)(fp + 4), len);
	sum = 0;
	for (int i = 0; i < len; i++)
		sum = (uint8_t)(sum + cfg[i]);
	assert_int_equal(sum, 0);
	/* 32 CPUs + bus + IOAPIC + 16 ISA IRQs + 2 local interrupts. */
	assert_int_equal(*(const uint16_t *)(cfg + 34), 32 + 1 + 1 + 16 + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_elf_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_elf_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_elf_bad_headers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_elf_overlap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_elf_out_of_ram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bz_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bz_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_initrd_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_boot_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mptable, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
