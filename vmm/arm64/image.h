/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/image.h: the arm64 kernel Image (Linux's Documentation/arch/arm64/booting.rst):
 * its 64-byte header read and checked, and where the kernel, the initrd and the device tree
 * go in RAM. Everything here is a value from a file the user named; each is checked, and a
 * layout that does not fit is refused with one line, never loaded in part. */
#ifndef BULKHEAD_VMM_ARM64_IMAGE_H
#define BULKHEAD_VMM_ARM64_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define ARM64_IMAGE_HDR_LEN 64
#define ARM64_IMAGE_MAGIC   0x644d5241u /* "ARM\x64", little-endian, at offset 56 */
#define ARM64_KERNEL_ALIGN  (2ULL << 20)

struct arm64_image {
	uint64_t text_offset; /* from a 2 MiB-aligned base */
	uint64_t image_size;  /* what the kernel occupies, its BSS included */
	uint64_t flags;
};

/* Reads the header of a file of file_size bytes (hdr: its first 64). 0, or -EINVAL with err:
 * no magic, big-endian, a page size other than 4 KiB or unspecified, a text offset that is
 * not 4 KiB-aligned or past 2 MiB, an effective size smaller than the file or past 1 GiB. */
int arm64_image_parse(const uint8_t *hdr, uint64_t file_size, struct arm64_image *out, char *err,
		      size_t errlen);

struct arm64_place {
	uint64_t kernel, kernel_end; /* guest-physical */
	uint64_t initrd;	     /* 0 with no initrd */
	uint64_t fdt;		     /* the device tree's start, in a 2 MiB block of its own */
};

/* Places the kernel at the start of RAM (ram_base + text_offset), the device tree in the last
 * 2 MiB block of RAM, and the initrd (initrd_size bytes, 0: none) page-aligned just below
 * that block. 0, or -ENOSPC with err when they do not fit without overlapping. */
int arm64_place(uint64_t ram_base, uint64_t ram_size, const struct arm64_image *k,
		uint64_t initrd_size, struct arm64_place *out, char *err, size_t errlen);

#endif
