/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_arm64.c: the arm64 machine's pieces that need no arm64 host — the device
 * tree (read back with libfdt, node by node, as the guest kernel reads it) and the Image header
 * and boot layout — against good values and every refusal: out-of-range counts, a command line
 * too long, a buffer too small (nothing written past it), a header that is not an arm64 Image
 * or asks for what the VMM does not give, a layout that does not fit RAM. */
#include "vmm/arm64/fdt.h"
#include "vmm/arm64/image.h"
#include "vmm/arm64/layout.h"

#include <endian.h>
#include <errno.h>
#include <libfdt.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MIB (1ull << 20)

static uint8_t dtb[64 << 10];
static char err[256];

static const struct arm64_dt good = {
	.ram_base = ARM64_RAM_BASE,
	.ram_size = 256 * MIB,
	.ncpus = 2,
	.gic_version = 3,
	.initrd_start = ARM64_RAM_BASE + 200 * MIB,
	.initrd_size = 5 * MIB + 123,
	.bootargs = "console=ttyS0 panic=-1",
	.nvirtio = 3,
};

static int node(const char *path)
{
	int off = fdt_path_offset(dtb, path);
	if (off < 0)
		fail_msg("no node %s: %s", path, fdt_strerror(off));
	return off;
}

static const char *str(const char *path, const char *prop)
{
	const char *s = fdt_getprop(dtb, node(path), prop, NULL);
	assert_non_null(s);
	return s;
}

/* Property prop of path as n big-endian cells, into v. */
static void cells(const char *path, const char *prop, uint32_t *v, int n)
{
	int len = 0;
	const fdt32_t *c = fdt_getprop(dtb, node(path), prop, &len);
	assert_non_null(c);
	assert_int_equal(len, n * 4);
	for (int i = 0; i < n; i++)
		v[i] = fdt32_to_cpu(c[i]);
}

static uint64_t u64(const char *path, const char *prop)
{
	uint32_t v[2];
	cells(path, prop, v, 2);
	return (uint64_t)v[0] << 32 | v[1];
}

static void build_ok(const struct arm64_dt *d)
{
	int n = arm64_fdt_build(d, dtb, sizeof(dtb), err, sizeof(err));
	if (n < 0)
		fail_msg("build: %s", err);
	assert_int_equal(fdt_check_full(dtb, (size_t)n), 0);
	assert_int_equal(fdt_totalsize(dtb), n);
}

static void the_tree(void **state)
{
	(void)state;
	uint32_t v[12];
	build_ok(&good);
	assert_string_equal(str("/", "compatible"), "linux,dummy-virt");
	cells("/", "interrupt-parent", v, 1);
	assert_int_equal(v[0], ARM64_FDT_GIC_PHANDLE);
	/* Two vCPUs, each by its MPIDR, started through PSCI over HVC. */
	assert_string_equal(str("/cpus/cpu@0", "enable-method"), "psci");
	cells("/cpus/cpu@1", "reg", v, 1);
	assert_int_equal(v[0], 1);
	assert_int_equal(fdt_path_offset(dtb, "/cpus/cpu@2"), -FDT_ERR_NOTFOUND);
	assert_string_equal(str("/psci", "method"), "hvc");
	assert_int_equal(fdt_node_check_compatible(dtb, node("/psci"), "arm,psci-0.2"), 0);
	/* RAM. */
	uint32_t mem[4];
	cells("/memory@80000000", "reg", mem, 4);
	assert_int_equal((uint64_t)mem[0] << 32 | mem[1], ARM64_RAM_BASE);
	assert_int_equal((uint64_t)mem[2] << 32 | mem[3], 256 * MIB);
	/* GICv3: distributor, then redistributors for exactly two vCPUs. */
	assert_int_equal(fdt_node_check_compatible(dtb, node("/intc@8000000"), "arm,gic-v3"), 0);
	cells("/intc@8000000", "reg", v, 8);
	assert_int_equal(v[1], ARM64_GIC_DIST_BASE);
	assert_int_equal(v[5], ARM64_GIC_REDIST_BASE);
	assert_int_equal(v[7], 2 * ARM64_GIC_REDIST_SIZE);
	assert_non_null(fdt_getprop(dtb, node("/intc@8000000"), "interrupt-controller", NULL));
	assert_int_equal(fdt_get_phandle(dtb, node("/intc@8000000")), ARM64_FDT_GIC_PHANDLE);
	/* The timer's four PPIs, level-low, no CPU mask on GICv3. */
	cells("/timer", "interrupts", v, 12);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[1], 13);
	assert_int_equal(v[7], 11); /* virtual: INTID 27 */
	assert_int_equal(v[2], 8);
	/* The UART on SPI 0, level-high; the console points at it. */
	assert_string_equal(str("/uart@9000000", "compatible"), "ns16550a");
	cells("/uart@9000000", "interrupts", v, 3);
	assert_true(v[0] == 0 && v[1] == ARM64_UART_SPI && v[2] == 4);
	assert_int_equal(fdt_path_offset(dtb, str("/chosen", "stdout-path")),
			 node("/uart@9000000"));
	/* Three virtio-mmio slots, each with its own SPI, edge-rising. */
	static const char *const slots[] = { "/virtio_mmio@a000000", "/virtio_mmio@a001000",
					     "/virtio_mmio@a002000" };
	for (unsigned i = 0; i < 3; i++) {
		assert_string_equal(str(slots[i], "compatible"), "virtio,mmio");
		cells(slots[i], "interrupts", v, 3);
		assert_true(v[0] == 0 && v[1] == ARM64_VIRTIO_SPI + i && v[2] == 1);
	}
	assert_int_equal(fdt_path_offset(dtb, "/virtio_mmio@a003000"), -FDT_ERR_NOTFOUND);
	/* /chosen: the command line and the initrd's bounds. */
	assert_string_equal(str("/chosen", "bootargs"), good.bootargs);
	assert_int_equal(u64("/chosen", "linux,initrd-start"), good.initrd_start);
	assert_int_equal(u64("/chosen", "linux,initrd-end"), good.initrd_start + good.initrd_size);
}

static void gic_v2(void **state)
{
	(void)state;
	struct arm64_dt d = good;
	uint32_t v[12];
	d.gic_version = 2;
	d.ncpus = 3;
	d.initrd_size = 0;
	build_ok(&d);
	assert_int_equal(
		fdt_node_check_compatible(dtb, node("/intc@8000000"), "arm,cortex-a15-gic"), 0);
	cells("/intc@8000000", "reg", v, 8);
	assert_int_equal(v[5], ARM64_GIC_CPU_BASE);
	/* GICv2 PPIs name their CPUs: three. */
	cells("/timer", "interrupts", v, 12);
	assert_int_equal(v[2], 8 | 0x7 << 8);
	assert_null(fdt_getprop(dtb, node("/chosen"), "linux,initrd-start", NULL));
}

static void refused(const struct arm64_dt *d, int want, const char *words)
{
	memset(dtb, 0xa5, sizeof(dtb));
	err[0] = '\0';
	assert_int_equal(arm64_fdt_build(d, dtb, sizeof(dtb), err, sizeof(err)), want);
	if (!strstr(err, words))
		fail_msg("want \"%s\" in: %s", words, err);
	assert_null(strchr(err, '\n'));
}

static void out_of_range(void **state)
{
	(void)state;
	struct arm64_dt d = good;
	d.ncpus = 0;
	refused(&d, -EINVAL, "vCPU count");
	d.ncpus = 124; /* 123 redistributors fit below the UART */
	refused(&d, -EINVAL, "vCPU count");
	d.ncpus = 123;
	build_ok(&d);
	d.gic_version = 2;
	d.ncpus = 9;
	refused(&d, -EINVAL, "vCPU count");
	d = good;
	d.gic_version = 4;
	refused(&d, -EINVAL, "GIC version");
	d = good;
	d.nvirtio = ARM64_VIRTIO_MAX + 1;
	refused(&d, -EINVAL, "virtio");
	d = good;
	d.ram_size = ARM64_RAM_MAX + 2 * MIB;
	refused(&d, -EINVAL, "RAM");
	d = good;
	d.initrd_start = ARM64_RAM_BASE + 255 * MIB;
	refused(&d, -EINVAL, "initrd");
	d.initrd_start = 0;
	refused(&d, -EINVAL, "initrd");
	d = good;
	char *line = malloc(ARM64_CMDLINE_MAX + 1);
	assert_non_null(line);
	memset(line, 'a', ARM64_CMDLINE_MAX);
	line[ARM64_CMDLINE_MAX] = '\0';
	d.bootargs = line;
	refused(&d, -EINVAL, "command line");
	line[ARM64_CMDLINE_MAX - 1] = '\0'; /* 2047 bytes: the most there is room for */
	build_ok(&d);
	assert_string_equal(str("/chosen", "bootargs"), line);
	free(line);
}

static void too_small(void **state)
{
	(void)state;
	int size = arm64_fdt_build(&good, dtb, sizeof(dtb), err, sizeof(err));
	assert_true(size > 0);
	for (size_t cap = 0; cap < (size_t)size; cap += cap < 64 ? 1 : 61) {
		memset(dtb, 0xa5, sizeof(dtb));
		int n = arm64_fdt_build(&good, dtb, cap, err, sizeof(err));
		if (n >= 0)
			fail_msg("a %zu-byte buffer held the tree", cap);
		assert_int_equal(n, -ENOSPC);
		for (size_t i = cap; i < sizeof(dtb); i++)
			if (dtb[i] != 0xa5)
				fail_msg("byte %zu written past a %zu-byte buffer", i, cap);
	}
}

/* A header as the kernel build writes one. */
static void header(uint8_t *h, uint64_t text_offset, uint64_t size, uint64_t flags)
{
	uint64_t le;
	uint32_t magic = htole32(ARM64_IMAGE_MAGIC);
	memset(h, 0, ARM64_IMAGE_HDR_LEN);
	le = htole64(text_offset);
	memcpy(h + 8, &le, 8);
	le = htole64(size);
	memcpy(h + 16, &le, 8);
	le = htole64(flags);
	memcpy(h + 24, &le, 8);
	memcpy(h + 56, &magic, 4);
}

static void image_header(void **state)
{
	(void)state;
	uint8_t h[ARM64_IMAGE_HDR_LEN];
	struct arm64_image k;
	header(h, 0, 40 * MIB, 0xa); /* 4 KiB pages, placed anywhere */
	assert_int_equal(arm64_image_parse(h, 30 * MIB, &k, err, sizeof(err)), 0);
	assert_int_equal(k.image_size, 40 * MIB);
	static const struct {
		uint64_t off, size, flags, file;
		const char *why;
	} bad[] = {
		{ 0, 40 * MIB, 1, 30 * MIB, "big-endian" },
		{ 0, 40 * MIB, 3 << 1, 30 * MIB, "page size" },
		{ 0, 40 * MIB, 2 << 1, 30 * MIB, "page size" },
		{ 0x80010, 40 * MIB, 0, 30 * MIB, "text offset" },
		{ 2 * MIB, 40 * MIB, 0, 30 * MIB, "text offset" },
		{ 0x80000, 0, 0, 30 * MIB, "3.17" },
		{ 0, 20 * MIB, 0, 30 * MIB, "effective size" },
		{ 0, 2048 * MIB, 0, 30 * MIB, "effective size" },
		{ 0, 40 * MIB, 0, 63, "magic" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		header(h, bad[i].off, bad[i].size, bad[i].flags);
		err[0] = '\0';
		assert_int_equal(arm64_image_parse(h, bad[i].file, &k, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].why))
			fail_msg("case %zu: want \"%s\" in: %s", i, bad[i].why, err);
	}
	header(h, 0, 40 * MIB, 0);
	h[56] ^= 1;
	assert_int_equal(arm64_image_parse(h, 30 * MIB, &k, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "magic"));
}

static void boot_layout(void **state)
{
	(void)state;
	struct arm64_image k = { .text_offset = 0, .image_size = 40 * MIB };
	struct arm64_place p;
	uint64_t ram = 256 * MIB, top = ARM64_RAM_BASE + ram;
	assert_int_equal(arm64_place(ARM64_RAM_BASE, ram, &k, 30 * MIB + 1, &p, err, sizeof(err)),
			 0);
	assert_int_equal(p.kernel, ARM64_RAM_BASE);
	assert_int_equal(p.fdt, top - 2 * MIB); /* a 2 MiB block of its own, at the top */
	assert_int_equal(p.fdt % (2 * MIB), 0);
	assert_int_equal(p.initrd % 4096, 0);
	assert_true(p.initrd >= p.kernel_end && p.initrd + 30 * MIB + 1 <= p.fdt);
	/* No initrd: none placed. */
	assert_int_equal(arm64_place(ARM64_RAM_BASE, ram, &k, 0, &p, err, sizeof(err)), 0);
	assert_int_equal(p.initrd, 0);
	/* What does not fit: an initrd as large as RAM, a kernel larger than RAM. */
	assert_int_equal(arm64_place(ARM64_RAM_BASE, ram, &k, ram, &p, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "--mem"));
	assert_int_equal(arm64_place(ARM64_RAM_BASE, ram, &k, 215 * MIB, &p, err, sizeof(err)),
			 -ENOSPC);
	k.image_size = 255 * MIB;
	assert_int_equal(arm64_place(ARM64_RAM_BASE, ram, &k, 0, &p, err, sizeof(err)), -ENOSPC);
	/* RAM itself out of range. */
	k.image_size = 40 * MIB;
	assert_int_equal(arm64_place(ARM64_RAM_BASE + 4096, ram, &k, 0, &p, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(arm64_place(ARM64_RAM_BASE, 2 * MIB, &k, 0, &p, err, sizeof(err)),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_tree),	cmocka_unit_test(gic_v2),
		cmocka_unit_test(out_of_range), cmocka_unit_test(too_small),
		cmocka_unit_test(image_header), cmocka_unit_test(boot_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
