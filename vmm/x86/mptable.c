/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/mptable.c: the Intel MultiProcessor Specification 1.4 tables Linux reads (without
 * ACPI) to find the vCPUs, the IOAPIC and how the ISA interrupts are wired. */
#include "vmm/vm.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/layout.h"

#include <errno.h>
#include <string.h>

#define MP_SPEC_REV	4 /* 1.4 */
#define MP_APIC_VERSION 0x14
#define MP_IOAPIC_VER	0x11
#define MP_ENTRY_CPU	0
#define MP_ENTRY_BUS	1
#define MP_ENTRY_IOAPIC 2
#define MP_ENTRY_IOINT	3
#define MP_ENTRY_LINT	4
#define MP_CPU_EN	0x1
#define MP_CPU_BP	0x2
#define MP_INT_INT	0
#define MP_INT_NMI	1
#define MP_INT_EXTINT	3
#define MP_ISA_IRQS	16

struct mp_fptr {
	char sig[4]; /* "_MP_" */
	uint32_t config;
	uint8_t len16; /* in 16-byte units: 1 */
	uint8_t rev;
	uint8_t checksum;
	uint8_t feature[5]; /* 0: a configuration table follows, no default config */
} __attribute__((packed));

struct mp_config {
	char sig[4]; /* "PCMP" */
	uint16_t len;
	uint8_t rev;
	uint8_t checksum;
	char oem[8];
	char product[12];
	uint32_t oem_table;
	uint16_t oem_size;
	uint16_t count;
	uint32_t lapic;
	uint16_t ext_len;
	uint8_t ext_checksum;
	uint8_t reserved;
} __attribute__((packed));

struct mp_cpu {
	uint8_t type, apic_id, apic_ver, flags;
	uint32_t signature, features;
	uint32_t reserved[2];
} __attribute__((packed));

struct mp_bus {
	uint8_t type, id;
	char name[6];
} __attribute__((packed));

struct mp_ioapic {
	uint8_t type, id, ver, flags;
	uint32_t addr;
} __attribute__((packed));

struct mp_int {
	uint8_t type, irqtype;
	uint16_t flags; /* 0: polarity and trigger conform to the bus (ISA: high, edge) */
	uint8_t src_bus, src_irq, dst_apic, dst_pin;
} __attribute__((packed));

#define MP_MAX_BYTES                                                                               \
	(sizeof(struct mp_fptr) + sizeof(struct mp_config) +                                       \
	 VM_MAX_VCPUS * sizeof(struct mp_cpu) + sizeof(struct mp_bus) + sizeof(struct mp_ioapic) + \
	 (MP_ISA_IRQS + 2) * sizeof(struct mp_int))

_Static_assert(MP_MAX_BYTES <= 0x100000 - X86_MPTABLE_GPA, "MP table outgrows base memory");

static uint8_t mp_checksum(const uint8_t *p, size_t n)
{
	uint8_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum = (uint8_t)(sum + p[i]);
	return (uint8_t)-sum;
}

int x86_mptable_write(const struct gmem *gm, unsigned ncpus)
{
	uint8_t buf[MP_MAX_BYTES];
	size_t at = sizeof(struct mp_fptr) + sizeof(struct mp_config);
	uint16_t count = 0;
	/* The IOAPIC's ID follows the CPUs' APIC IDs so none collide. */
	uint8_t ioapic_id = (uint8_t)ncpus;

	if (ncpus < 1 || ncpus > VM_MAX_VCPUS)
		return -EINVAL;
	memset(buf, 0, sizeof(buf));
	for (unsigned i = 0; i < ncpus; i++, count++) {
		struct mp_cpu c = { .type = MP_ENTRY_CPU,
				    .apic_id = (uint8_t)i,
				    .apic_ver = MP_APIC_VERSION,
				    .flags = MP_CPU_EN | (i == 0 ? MP_CPU_BP : 0),
				    .signature = 0x600, /* family 6: informational only */
				    .features = 0x201 /* FPU, APIC */ };
		memcpy(buf + at, &c, sizeof(c));
		at += sizeof(c);
	}
	struct mp_bus bus = { .type = MP_ENTRY_BUS, .id = 0, .name = "ISA   " };
	memcpy(buf + at, &bus, sizeof(bus));
	at += sizeof(bus);
	count++;
	struct mp_ioapic io = { .type = MP_ENTRY_IOAPIC,
				.id = ioapic_id,
				.ver = MP_IOAPIC_VER,
				.flags = MP_CPU_EN,
				.addr = (uint32_t)X86_IOAPIC_GPA };
	memcpy(buf + at, &io, sizeof(io));
	at += sizeof(io);
	count++;
	/* KVM's default routing wires GSI n to IOAPIC pin n (and PIC input n for n < 16). */
	for (unsigned irq = 0; irq < MP_ISA_IRQS; irq++, count++) {
		struct mp_int e = { .type = MP_ENTRY_IOINT,
				    .irqtype = MP_INT_INT,
				    .src_bus = 0,
				    .src_irq = (uint8_t)irq,
				    .dst_apic = ioapic_id,
				    .dst_pin = (uint8_t)irq };
		memcpy(buf + at, &e, sizeof(e));
		at += sizeof(e);
	}
	struct mp_int lint0 = { .type = MP_ENTRY_LINT, .irqtype = MP_INT_EXTINT, .dst_apic = 0xff };
	struct mp_int lint1 = {
		.type = MP_ENTRY_LINT, .irqtype = MP_INT_NMI, .dst_apic = 0xff, .dst_pin = 1
	};
	memcpy(buf + at, &lint0, sizeof(lint0));
	at += sizeof(lint0);
	memcpy(buf + at, &lint1, sizeof(lint1));
	at += sizeof(lint1);
	count += 2;

	struct mp_config *cfg = (struct mp_config *)(buf + sizeof(struct mp_fptr));
	memcpy(cfg->sig, "PCMP", 4);
	cfg->len = (uint16_t)(at - sizeof(struct mp_fptr));
	cfg->rev = MP_SPEC_REV;
	memcpy(cfg->oem, "BULKHEAD", 8);
	memcpy(cfg->product, "MICROVM     ", 12);
	cfg->count = count;
	cfg->lapic = (uint32_t)X86_LAPIC_GPA;
	cfg->checksum = mp_checksum((const uint8_t *)cfg, cfg->len);

	struct mp_fptr *fp = (struct mp_fptr *)buf;
	memcpy(fp->sig, "_MP_", 4);
	fp->config = (uint32_t)(X86_MPTABLE_GPA + sizeof(struct mp_fptr));
	fp->len16 = 1;
	fp->rev = MP_SPEC_REV;
	fp->checksum = mp_checksum(buf, sizeof(struct mp_fptr));
	return gmem_write(gm, X86_MPTABLE_GPA, buf, at);
}
