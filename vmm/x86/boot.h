/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/boot.h: direct 64-bit Linux boot — the bzImage loader, the zero page
 * (boot_params: e820, command line, initrd) and the MP table. */
#ifndef BULKHEAD_VMM_X86_BOOT_H
#define BULKHEAD_VMM_X86_BOOT_H

#include "vmm/gmem.h"
#include "vmm/loader.h"

#include <asm/bootparam.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Boot protocol 2.12: the first with xloadflags (XLF_KERNEL_64, 64-bit entry at +0x200). */
#define X86_BZIMAGE_MIN_VERSION 0x020c
#define X86_CMDLINE_MAX		2048 /* COMMAND_LINE_SIZE on x86, NUL included */
/* Where an ELF kernel says nothing: the traditional limit every 64-bit kernel accepts. */
#define X86_INITRD_ADDR_MAX_DEFAULT 0x37ffffffULL

struct x86_kernel {
	struct loader_result img;
	bool has_hdr;		 /* bzImage: hdr holds its setup header */
	struct setup_header hdr; /* copied into the zero page as-is, then completed */
};

/* Parses a bzImage setup header, loads the protected-mode kernel at its preferred address
 * and sets the 64-bit entry (load + 0x200). Every field the file supplies is checked;
 * returns 0 or -ENOEXEC / -EFBIG / -EINVAL with one line in err. */
int x86_bzimage_load(const struct gmem *gm, const uint8_t *img, size_t len, struct x86_kernel *k,
		     char *err, size_t errlen);

/* Either format, by its magic: ELF vmlinux (loaded at p_paddr) or bzImage. */
int x86_kernel_load(const struct gmem *gm, const uint8_t *img, size_t len, struct x86_kernel *k,
		    char *err, size_t errlen);

/* Highest page-aligned guest address for an initrd of `size` bytes: above kernel_end,
 * ending at or below both RAM's end and addr_max + 1. -ENOSPC when it does not fit. */
int x86_initrd_place(uint64_t ram_bytes, uint64_t kernel_end, uint64_t addr_max, uint64_t size,
		     uint64_t *gpa);

/* Fills the e820 table: low RAM, the reserved BIOS area, RAM from 1 MiB to the end; the
 * MMIO hole above RAM stays a gap. Returns the number of entries. */
unsigned x86_e820_build(struct boot_params *zp, uint64_t ram_bytes);

/*
 * Writes the zero page at X86_ZEROPAGE_GPA, the command line at X86_CMDLINE_GPA and the
 * initrd (may be NULL) below its limit, for kernel k (k may be NULL: a test guest, which
 * gets a header with just the fields a loader sets). Returns 0 or -errno with err set.
 */
int x86_boot_params_write(const struct gmem *gm, const struct x86_kernel *k, const char *cmdline,
			  const struct loader_image *initrd, char *err, size_t errlen);

/* Writes an Intel MP 1.4 floating pointer and configuration table at X86_MPTABLE_GPA:
 * ncpus processors with APIC IDs 0..ncpus-1, an ISA bus, the IOAPIC, ISA IRQs 0..15 on its
 * pins 0..15, LINT0 ExtINT and LINT1 NMI. Returns 0, -EINVAL (ncpus), -EFAULT (no RAM). */
int x86_mptable_write(const struct gmem *gm, unsigned ncpus);

#endif
