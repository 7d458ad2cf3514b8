/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/bzimage.c: the bzImage loader (boot protocol >= 2.12, 64-bit entry), and the
 * choice between it and the ELF loader. Every header field is checked before use. */
#include "lib/errbuf.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/layout.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define HDR_OFFSET	0x1f1	   /* struct setup_header's place in the file and the zero page */
#define HDR_MAGIC	0x53726448 /* "HdrS" */
#define BOOT_FLAG	0xaa55
#define ENTRY64_OFFSET	0x200
#define SETUP_SECTS_DEF 4
#define SECTOR		512

int x86_bzimage_load(const struct gmem *gm, const uint8_t *img, size_t len, struct x86_kernel *k,
		     char *err, size_t errlen)
{
	struct setup_header h;

	memset(k, 0, sizeof(*k));
	if (len > LOADER_IMAGE_MAX)
		return errbuf_fail(err, errlen, -EFBIG, "bzImage larger than the loader accepts");
	if (!img || len < HDR_OFFSET + sizeof(h))
		return errbuf_fail(err, errlen, -ENOEXEC,
				   "bzImage truncated inside its setup header");
	memcpy(&h, img + HDR_OFFSET, sizeof(h));
	if (h.header != HDR_MAGIC || h.boot_flag != BOOT_FLAG)
		return errbuf_fail(err, errlen, -ENOEXEC, "not a bzImage (no HdrS / 0xAA55)");
	if (h.version < X86_BZIMAGE_MIN_VERSION)
		return errbuf_fail(
			err, errlen, -ENOEXEC,
			"bzImage boot protocol %u.%02u is older than 2.12 (no 64-bit entry)",
			h.version >> 8, h.version & 0xff);
	if (!(h.xloadflags & XLF_KERNEL_64) || !(h.loadflags & LOADED_HIGH))
		return errbuf_fail(err, errlen, -ENOEXEC,
				   "bzImage has no 64-bit entry point (xloadflags 0x%x)",
				   h.xloadflags);
	/* The header's own length: the jump at 0x200 skips exactly over it. */
	size_t hdr_end = 0x202 + (size_t)img[0x201];
	if (hdr_end > len || hdr_end < offsetof(struct setup_header, init_size) + HDR_OFFSET + 4)
		return errbuf_fail(err, errlen, -ENOEXEC, "bzImage setup header length is invalid");

	unsigned sects = h.setup_sects ? h.setup_sects : SETUP_SECTS_DEF;
	size_t setup_size = ((size_t)sects + 1) * SECTOR;
	if (setup_size >= len)
		return errbuf_fail(err, errlen, -ENOEXEC,
				   "bzImage truncated: %zu bytes, its setup alone claims %zu", len,
				   setup_size);
	uint64_t pm_size = len - setup_size;
	uint64_t load = h.pref_address;
	uint64_t align = h.kernel_alignment;
	if (load < X86_HIGH_RAM_GPA || load > X86_RAM_MAX_BELOW_4G)
		return errbuf_fail(err, errlen, -EINVAL,
				   "bzImage preferred load address 0x%llx is outside 1 MiB..3 GiB",
				   (unsigned long long)load);
	if (align && ((align & (align - 1)) || load % align))
		return errbuf_fail(err, errlen, -EINVAL,
				   "bzImage load address 0x%llx is not %u-aligned",
				   (unsigned long long)load, (unsigned)align);
	/* The decompressor works in place over init_size bytes from the load address. */
	uint64_t span = h.init_size > pm_size ? h.init_size : pm_size;
	if (span > LOADER_IMAGE_MAX)
		return errbuf_fail(err, errlen, -EFBIG, "bzImage init_size %u is oversized",
				   h.init_size);
	uint8_t *dst = gmem_ptr(gm, load, span);
	if (!dst)
		return errbuf_fail(
			err, errlen, -EFBIG,
			"bzImage needs 0x%llx..0x%llx, beyond guest RAM (give more --mem)",
			(unsigned long long)load, (unsigned long long)(load + span));
	memcpy(dst, img + setup_size, (size_t)pm_size);
	memset(dst + pm_size, 0, (size_t)(span - pm_size));

	k->has_hdr = true;
	/* Only the header bytes the file has: later fields keep zero, as the protocol asks. */
	size_t copy = hdr_end - HDR_OFFSET;
	if (copy > sizeof(k->hdr))
		copy = sizeof(k->hdr);
	memcpy(&k->hdr, img + HDR_OFFSET, copy);
	k->img.entry = load + ENTRY64_OFFSET;
	k->img.start = load;
	k->img.end = load + span;
	return 0;
}

int x86_kernel_load(const struct gmem *gm, const uint8_t *img, size_t len, struct x86_kernel *k,
		    char *err, size_t errlen)
{
	memset(k, 0, sizeof(*k));
	if (img && len >= 4 && memcmp(img, "\177ELF", 4) == 0)
		return loader_elf_load(gm, img, len, X86_HIGH_RAM_GPA, &k->img, err, errlen);
	if (img && len >= 0x206 && memcmp(img + 0x202, "HdrS", 4) == 0)
		return x86_bzimage_load(gm, img, len, k, err, errlen);
	snprintf(err, errlen, "neither an ELF vmlinux nor a bzImage");
	return -ENOEXEC;
}
