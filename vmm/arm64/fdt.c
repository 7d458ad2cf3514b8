/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/fdt.c: the device tree, with libfdt's sequential writer: nodes in order, each
 * property once; the first libfdt error ends the build (FDT_ERR_NOSPACE: the buffer is too
 * small). The bindings followed are Linux's: arm/cpus, arm/psci, interrupt-controller/
 * arm,gic-v3 and arm,gic, timer/arm,arch_timer, serial/8250, virtio/mmio, chosen. */
#include "vmm/arm64/fdt.h"

#include "lib/errbuf.h"
#include "vmm/arm64/layout.h"

#include <errno.h>
#include <libfdt.h>
#include <stdio.h>
#include <string.h>

/* Interrupt specifiers of the GIC bindings: <type number flags>. */
#define GIC_SPI		0
#define GIC_PPI		1
#define IRQ_EDGE_RISING 1
#define IRQ_LEVEL_HIGH	4
#define IRQ_LEVEL_LOW	8
#define UART_CLOCK_HZ	1843200 /* 8250_of needs one; the VMM's UART has no baud divisor */

uint64_t arm64_mpidr(unsigned i)
{
	return ((uint64_t)(i >> 4) << 8) | (i & 0xf);
}

/* A property of big-endian cells. */
static int prop_cells(void *fdt, const char *name, const uint32_t *v, unsigned n)
{
	fdt32_t cells[12];
	if (n > sizeof(cells) / sizeof(cells[0]))
		return -FDT_ERR_INTERNAL;
	for (unsigned i = 0; i < n; i++)
		cells[i] = cpu_to_fdt32(v[i]);
	return fdt_property(fdt, name, cells, (int)(n * sizeof(fdt32_t)));
}

/* reg = <addr size> pairs, two cells each (the root's #address-cells and #size-cells). */
static int prop_reg(void *fdt, const uint64_t *pairs, unsigned npairs)
{
	uint32_t v[8];
	if (npairs > 2)
		return -FDT_ERR_INTERNAL;
	for (unsigned i = 0; i < 2 * npairs; i++) {
		v[2 * i] = (uint32_t)(pairs[i] >> 32);
		v[2 * i + 1] = (uint32_t)pairs[i];
	}
	return prop_cells(fdt, "reg", v, 4 * npairs);
}

static int begin_node_at(void *fdt, const char *name, uint64_t addr)
{
	char n[64];
	snprintf(n, sizeof(n), "%s@%llx", name, (unsigned long long)addr);
	return fdt_begin_node(fdt, n);
}

static int cpus(void *fdt, const struct arm64_dt *d)
{
	int rc = fdt_begin_node(fdt, "cpus");
	if (!rc)
		rc = fdt_property_u32(fdt, "#address-cells", 1);
	if (!rc)
		rc = fdt_property_u32(fdt, "#size-cells", 0);
	for (unsigned i = 0; !rc && i < d->ncpus; i++) {
		uint64_t mpidr = arm64_mpidr(i);
		rc = begin_node_at(fdt, "cpu", mpidr);
		if (!rc)
			rc = fdt_property_string(fdt, "device_type", "cpu");
		if (!rc)
			rc = fdt_property_string(fdt, "compatible", "arm,arm-v8");
		if (!rc)
			rc = fdt_property_string(fdt, "enable-method", "psci");
		if (!rc)
			rc = fdt_property_u32(fdt, "reg", (uint32_t)mpidr);
		if (!rc)
			rc = fdt_end_node(fdt);
	}
	return rc ? rc : fdt_end_node(fdt);
}

static int psci(void *fdt)
{
	/* PSCI 0.2 and later, KVM's own (KVM_ARM_VCPU_PSCI_0_2), called with HVC. */
	static const char compat[] = "arm,psci-1.0\0arm,psci-0.2";
	int rc = fdt_begin_node(fdt, "psci");
	if (!rc)
		rc = fdt_property(fdt, "compatible", compat, sizeof(compat));
	if (!rc)
		rc = fdt_property_string(fdt, "method", "hvc");
	return rc ? rc : fdt_end_node(fdt);
}

static int gic(void *fdt, const struct arm64_dt *d)
{
	int rc = begin_node_at(fdt, "intc", ARM64_GIC_DIST_BASE);
	if (!rc && d->gic_version == 3) {
		uint64_t reg[] = { ARM64_GIC_DIST_BASE, ARM64_GIC_DIST_SIZE, ARM64_GIC_REDIST_BASE,
				   ARM64_GIC_REDIST_SIZE * d->ncpus };
		rc = fdt_property_string(fdt, "compatible", "arm,gic-v3");
		if (!rc)
			rc = prop_reg(fdt, reg, 2);
	} else if (!rc) {
		uint64_t reg[] = { ARM64_GIC_DIST_BASE, ARM64_GIC_DIST_SIZE, ARM64_GIC_CPU_BASE,
				   ARM64_GIC_CPU_SIZE };
		rc = fdt_property_string(fdt, "compatible", "arm,cortex-a15-gic");
		if (!rc)
			rc = prop_reg(fdt, reg, 2);
	}
	if (!rc)
		rc = fdt_property_u32(fdt, "#interrupt-cells", 3);
	if (!rc)
		rc = fdt_property(fdt, "interrupt-controller", NULL, 0);
	if (!rc)
		rc = fdt_property_u32(fdt, "phandle", ARM64_FDT_GIC_PHANDLE);
	return rc ? rc : fdt_end_node(fdt);
}

static int timer(void *fdt, const struct arm64_dt *d)
{
	/* GICv2 PPIs name the CPUs they reach (bits 8..15); GICv3's do not. */
	uint32_t f = IRQ_LEVEL_LOW;
	if (d->gic_version == 2)
		f |= ((1u << d->ncpus) - 1) << 8;
	uint32_t irqs[] = {
		GIC_PPI, ARM64_TIMER_PPI_SEC,  f, GIC_PPI, ARM64_TIMER_PPI_PHYS, f,
		GIC_PPI, ARM64_TIMER_PPI_VIRT, f, GIC_PPI, ARM64_TIMER_PPI_HYP,	 f,
	};
	int rc = fdt_begin_node(fdt, "timer");
	if (!rc)
		rc = fdt_property_string(fdt, "compatible", "arm,armv8-timer");
	if (!rc)
		rc = prop_cells(fdt, "interrupts", irqs, 12);
	if (!rc)
		rc = fdt_property(fdt, "always-on", NULL, 0);
	return rc ? rc : fdt_end_node(fdt);
}

static int uart(void *fdt)
{
	uint64_t reg[] = { ARM64_UART_BASE, ARM64_UART_SIZE };
	uint32_t irq[] = { GIC_SPI, ARM64_UART_SPI, IRQ_LEVEL_HIGH };
	int rc = begin_node_at(fdt, "uart", ARM64_UART_BASE);
	if (!rc)
		rc = fdt_property_string(fdt, "compatible", "ns16550a");
	if (!rc)
		rc = prop_reg(fdt, reg, 1);
	if (!rc)
		rc = prop_cells(fdt, "interrupts", irq, 3);
	if (!rc)
		rc = fdt_property_u32(fdt, "clock-frequency", UART_CLOCK_HZ);
	return rc ? rc : fdt_end_node(fdt);
}

static int virtio(void *fdt, unsigned slot)
{
	uint64_t base = ARM64_VIRTIO_BASE + slot * ARM64_VIRTIO_SLOT;
	uint64_t reg[] = { base, ARM64_VIRTIO_SLOT };
	uint32_t irq[] = { GIC_SPI, ARM64_VIRTIO_SPI + slot, IRQ_EDGE_RISING };
	int rc = begin_node_at(fdt, "virtio_mmio", base);
	if (!rc)
		rc = fdt_property_string(fdt, "compatible", "virtio,mmio");
	if (!rc)
		rc = prop_reg(fdt, reg, 1);
	if (!rc)
		rc = prop_cells(fdt, "interrupts", irq, 3);
	if (!rc)
		rc = fdt_property(fdt, "dma-coherent", NULL, 0);
	return rc ? rc : fdt_end_node(fdt);
}

static int chosen(void *fdt, const struct arm64_dt *d)
{
	char out[48];
	snprintf(out, sizeof(out), "/uart@%llx", (unsigned long long)ARM64_UART_BASE);
	int rc = fdt_begin_node(fdt, "chosen");
	if (!rc)
		rc = fdt_property_string(fdt, "bootargs", d->bootargs ? d->bootargs : "");
	if (!rc)
		rc = fdt_property_string(fdt, "stdout-path", out);
	if (!rc && d->initrd_size) {
		rc = fdt_property_u64(fdt, "linux,initrd-start", d->initrd_start);
		if (!rc)
			rc = fdt_property_u64(fdt, "linux,initrd-end",
					      d->initrd_start + d->initrd_size);
	}
	return rc ? rc : fdt_end_node(fdt);
}

static int tree(void *fdt, const struct arm64_dt *d)
{
	uint64_t mem[] = { d->ram_base, d->ram_size };
	int rc = fdt_finish_reservemap(fdt);
	if (!rc)
		rc = fdt_begin_node(fdt, "");
	if (!rc)
		rc = fdt_property_string(fdt, "compatible", "linux,dummy-virt");
	if (!rc)
		rc = fdt_property_u32(fdt, "#address-cells", 2);
	if (!rc)
		rc = fdt_property_u32(fdt, "#size-cells", 2);
	if (!rc)
		rc = fdt_property_u32(fdt, "interrupt-parent", ARM64_FDT_GIC_PHANDLE);
	if (!rc)
		rc = cpus(fdt, d);
	if (!rc)
		rc = psci(fdt);
	if (!rc && !(rc = begin_node_at(fdt, "memory", d->ram_base))) {
		rc = fdt_property_string(fdt, "device_type", "memory");
		if (!rc)
			rc = prop_reg(fdt, mem, 1);
		if (!rc)
			rc = fdt_end_node(fdt);
	}
	if (!rc)
		rc = gic(fdt, d);
	if (!rc)
		rc = timer(fdt, d);
	if (!rc)
		rc = uart(fdt);
	for (unsigned i = 0; !rc && i < d->nvirtio; i++)
		rc = virtio(fdt, i);
	if (!rc)
		rc = chosen(fdt, d);
	if (!rc)
		rc = fdt_end_node(fdt);
	return rc ? rc : fdt_finish(fdt);
}

/* What is wrong with d, or NULL. */
static const char *check(const struct arm64_dt *d)
{
	unsigned max_cpus = d->gic_version == 2
				    ? ARM64_GICV2_MAX_CPUS
				    : (unsigned)((ARM64_GIC_REDIST_LIMIT - ARM64_GIC_REDIST_BASE) /
						 ARM64_GIC_REDIST_SIZE);
	if (d->gic_version != 2 && d->gic_version != 3)
		return "the GIC version is neither 2 nor 3";
	if (d->ncpus == 0 || d->ncpus > max_cpus)
		return "the vCPU count is out of range for this GIC";
	if (d->ram_size == 0 || d->ram_size > ARM64_RAM_MAX || d->ram_base != ARM64_RAM_BASE)
		return "RAM is out of range";
	if (d->nvirtio > ARM64_VIRTIO_MAX)
		return "too many virtio-mmio devices";
	if (d->bootargs && strnlen(d->bootargs, ARM64_CMDLINE_MAX) >= ARM64_CMDLINE_MAX)
		return "the kernel command line is longer than arm64's 2047 bytes";
	if (d->initrd_size &&
	    (d->initrd_start < d->ram_base || d->initrd_start - d->ram_base > d->ram_size ||
	     d->initrd_size > d->ram_size - (d->initrd_start - d->ram_base)))
		return "the initrd lies outside RAM";
	return NULL;
}

int arm64_fdt_build(const struct arm64_dt *d, void *buf, size_t cap, char *err, size_t errlen)
{
	const char *bad = check(d);
	if (bad)
		return errbuf_fail(err, errlen, -EINVAL, "device tree: %s", bad);
	if (cap > ARM64_FDT_MAX)
		cap = ARM64_FDT_MAX;
	int rc = fdt_create(buf, (int)cap);
	if (!rc)
		rc = tree(buf, d);
	if (rc == -FDT_ERR_NOSPACE)
		return errbuf_fail(err, errlen, -ENOSPC,
				   "device tree: does not fit its %zu-byte buffer", cap);
	if (rc)
		return errbuf_fail(err, errlen, -EIO, "device tree: libfdt: %s", fdt_strerror(rc));
	return (int)fdt_totalsize(buf);
}
