/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/zeropage.c: (--machine) the boot state Linux relies on, checked from inside:
 * entry registers, control registers, the zero page (e820, command line, initrd address and
 * size) and the MP table. Exit 0 = all as documented; n > 0 names the first failed check.
 * The e2e suite passes --mem 64 --cmdline ZP_CMDLINE and an initrd starting "BULKHEAD-RD". */
#include "tests/guests/guest.h"
#include "vmm/x86/layout.h"

#include <asm/bootparam.h>

#define ZP_CMDLINE   "bulkhead zeropage test"
#define ZP_MEM	     (64ULL << 20)
#define RD_MAGIC     "BULKHEAD-RD"
#define CR0_PE_PG    0x80000001ULL
#define CR4_PAE	     0x20ULL
#define MSR_EFER     0xc0000080
#define EFER_LME_LMA 0x500ULL

static uint64_t read_cr0(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}

static uint64_t read_cr4(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static uint16_t read_cs(void)
{
	uint16_t v;
	__asm__ volatile("mov %%cs, %0" : "=r"(v));
	return v;
}

static uint8_t sum(const uint8_t *p, uint64_t n)
{
	uint8_t s = 0;
	for (uint64_t i = 0; i < n; i++)
		s = (uint8_t)(s + p[i]);
	return s;
}

static int check_mptable(uint64_t ncpus)
{
	const uint8_t *fp = (const uint8_t *)X86_MPTABLE_GPA;
	if (!guest_memeq(fp, "_MP_", 4) || sum(fp, 16) != 0)
		return 1;
	uint32_t cfg_addr = *(const uint32_t *)(fp + 4);
	const uint8_t *cfg = (const uint8_t *)(uint64_t)cfg_addr;
	uint16_t len = *(const uint16_t *)(cfg + 4), count = *(const uint16_t *)(cfg + 34);
	if (!guest_memeq(cfg, "PCMP", 4) || sum(cfg, len) != 0)
		return 2;
	/* Processor entries (type 0, 20 bytes) come first: one per vCPU, APIC IDs 0..n-1. */
	const uint8_t *e = cfg + 44;
	uint64_t cpus = 0;
	for (uint16_t i = 0; i < count && e < cfg + len; i++) {
		if (e[0] == 0) {
			if (e[1] != cpus)
				return 3;
			cpus++;
			e += 20;
		} else {
			e += 8;
		}
	}
	return cpus == ncpus ? 0 : 4;
}

int guest_main(void)
{
	const struct guest_entry *r = &guest_entry_regs;
	const struct boot_params *zp = (const struct boot_params *)X86_ZEROPAGE_GPA;

	if (r->rdi != TG_ABI_VERSION)
		return 1;
	if (r->rsi != X86_ZEROPAGE_GPA)
		return 2;
	if (r->rdx != 0 || r->rcx < 1)
		return 3;
	if (r->rsp != TG_STACK_TOP || (r->rflags & 0x200) || !(r->rflags & 0x2))
		return 4;
	if ((read_cr0() & CR0_PE_PG) != CR0_PE_PG || !(read_cr4() & CR4_PAE) ||
	    (guest_rdmsr(MSR_EFER) & EFER_LME_LMA) != EFER_LME_LMA || read_cs() != 0x08)
		return 5;

	/* Header fields a boot loader sets. */
	if (zp->hdr.boot_flag != 0xaa55 || zp->hdr.header != 0x53726448 ||
	    zp->hdr.type_of_loader != 0xff || !(zp->hdr.loadflags & LOADED_HIGH))
		return 10;
	/* e820: low RAM, reserved to 1 MiB, RAM from 1 MiB to the end of --mem. */
	if (zp->e820_entries != 3)
		return 11;
	const struct boot_e820_entry *e = zp->e820_table;
	if (e[0].addr != 0 || e[0].size != X86_LOW_RAM_END || e[0].type != 1 ||
	    e[1].addr != X86_LOW_RAM_END || e[1].addr + e[1].size != 0x100000 || e[1].type != 2 ||
	    e[2].addr != 0x100000 || e[2].addr + e[2].size != ZP_MEM || e[2].type != 1)
		return 12;
	/* Command line, NUL-terminated, where cmd_line_ptr says. */
	const char *cl = (const char *)(uint64_t)zp->hdr.cmd_line_ptr;
	if (zp->hdr.cmd_line_ptr != X86_CMDLINE_GPA ||
	    !guest_memeq(cl, ZP_CMDLINE, sizeof(ZP_CMDLINE)))
		return 13;
	/* Initrd: page-aligned, inside RAM below initrd_addr_max, above this image. */
	uint64_t rd = zp->hdr.ramdisk_image | ((uint64_t)zp->ext_ramdisk_image << 32);
	uint64_t rdsz = zp->hdr.ramdisk_size | ((uint64_t)zp->ext_ramdisk_size << 32);
	if (!rd || rd % 4096 || rdsz < sizeof(RD_MAGIC) - 1 || rd + rdsz > ZP_MEM ||
	    rd + rdsz - 1 > zp->hdr.initrd_addr_max || rd < 0x200000)
		return 14;
	if (!guest_memeq((const void *)rd, RD_MAGIC, sizeof(RD_MAGIC) - 1))
		return 15;
	int mp = check_mptable(r->rcx);
	if (mp)
		return 20 + mp;
	guest_puts("zeropage: ok initrd_size=");
	guest_putu(rdsz);
	guest_puts("\n");
	return 0;
}
