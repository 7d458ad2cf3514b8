/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/zeropage.c: boot_params ("zero page") for the 64-bit boot protocol — e820 map,
 * command line, initrd placement — written into guest RAM through gmem only. */
#include "vmm/x86/boot.h"
#include "vmm/x86/layout.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PAGE		 4096ULL
#define HDR_MAGIC	 0x53726448
#define BOOT_FLAG	 0xaa55
#define LOADER_UNDEFINED 0xff /* type_of_loader: "a boot loader with no assigned ID" */

int x86_initrd_place(uint64_t ram_bytes, uint64_t kernel_end, uint64_t addr_max, uint64_t size,
		     uint64_t *gpa)
{
	uint64_t top = ram_bytes;
	if (addr_max < UINT64_MAX && addr_max + 1 < top)
		top = addr_max + 1;
	if (size == 0 || size > top)
		return -ENOSPC;
	uint64_t at = (top - size) & ~(PAGE - 1);
	if (at < kernel_end || at < X86_HIGH_RAM_GPA)
		return -ENOSPC;
	*gpa = at;
	return 0;
}

unsigned x86_e820_build(struct boot_params *zp, uint64_t ram_bytes)
{
	unsigned n = 0;
	zp->e820_table[n++] = (struct boot_e820_entry){ 0, X86_LOW_RAM_END, 1 /* RAM */ };
	zp->e820_table[n++] =
		(struct boot_e820_entry){ X86_LOW_RAM_END, X86_HIGH_RAM_GPA - X86_LOW_RAM_END,
					  2 /* reserved */ };
	if (ram_bytes > X86_HIGH_RAM_GPA)
		zp->e820_table[n++] = (struct boot_e820_entry){
			X86_HIGH_RAM_GPA, ram_bytes - X86_HIGH_RAM_GPA, 1 /* RAM */
		};
	zp->e820_entries = (uint8_t)n;
	return n;
}

int x86_boot_params_write(const struct gmem *gm, const struct x86_kernel *k, const char *cmdline,
			  const struct loader_image *initrd, char *err, size_t errlen)
{
	static struct boot_params zp_zero;
	struct boot_params zp = zp_zero;
	uint64_t ram = gm->size; /* one window from 0: vm_create() */

	if (k && k->has_hdr) {
		zp.hdr = k->hdr;
	} else {
		/* No setup header in the image (ELF vmlinux, test guest): write the fields a
		 * boot loader would have found, so the kernel sees a consistent header. */
		zp.hdr.boot_flag = BOOT_FLAG;
		zp.hdr.header = HDR_MAGIC;
		zp.hdr.version = X86_BZIMAGE_MIN_VERSION;
		zp.hdr.initrd_addr_max = (uint32_t)X86_INITRD_ADDR_MAX_DEFAULT;
		zp.hdr.cmdline_size = X86_CMDLINE_MAX - 1;
		zp.hdr.kernel_alignment = 0x200000;
	}
	zp.hdr.type_of_loader = LOADER_UNDEFINED;
	zp.hdr.loadflags |= LOADED_HIGH;

	size_t clen = strlen(cmdline ? cmdline : "");
	uint64_t cmax = zp.hdr.cmdline_size ? zp.hdr.cmdline_size : 255;
	if (cmax > X86_CMDLINE_MAX - 1)
		cmax = X86_CMDLINE_MAX - 1;
	if (clen > cmax) {
		snprintf(err, errlen, "command line is %zu bytes; this kernel takes at most %llu",
			 clen, (unsigned long long)cmax);
		return -E2BIG;
	}
	if (gmem_write(gm, X86_CMDLINE_GPA, cmdline ? cmdline : "", clen + 1)) {
		snprintf(err, errlen, "no RAM for the command line");
		return -EFAULT;
	}
	zp.hdr.cmd_line_ptr = (uint32_t)X86_CMDLINE_GPA;

	if (initrd && initrd->len) {
		uint64_t at, kend = k ? k->img.end : X86_HIGH_RAM_GPA;
		uint64_t max = zp.hdr.initrd_addr_max ? zp.hdr.initrd_addr_max
						      : X86_INITRD_ADDR_MAX_DEFAULT;
		if (x86_initrd_place(ram, kend, max, initrd->len, &at)) {
			snprintf(err, errlen,
				 "initrd (%zu bytes) does not fit between the kernel's end 0x%llx "
				 "and 0x%llx (give more --mem)",
				 initrd->len, (unsigned long long)kend,
				 (unsigned long long)(ram < max ? ram : max));
			return -ENOSPC;
		}
		if (gmem_write(gm, at, initrd->data, initrd->len)) {
			snprintf(err, errlen, "no RAM for the initrd");
			return -EFAULT;
		}
		zp.hdr.ramdisk_image = (uint32_t)at;
		zp.hdr.ramdisk_size = (uint32_t)initrd->len;
		zp.ext_ramdisk_image = (uint32_t)(at >> 32);
		zp.ext_ramdisk_size = (uint32_t)((uint64_t)initrd->len >> 32);
	}
	x86_e820_build(&zp, ram);
	if (gmem_write(gm, X86_ZEROPAGE_GPA, &zp, sizeof(zp))) {
		snprintf(err, errlen, "no RAM for the zero page");
		return -EFAULT;
	}
	return 0;
}
