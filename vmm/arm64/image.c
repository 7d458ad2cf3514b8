/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/image.c: the Image header and the boot layout (vmm/arm64/image.h). */
#include "vmm/arm64/image.h"

#include "lib/errbuf.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#define IMAGE_FLAG_BE	    (1ull << 0)
#define IMAGE_FLAG_PAGES    (3ull << 1) /* 0: unspecified, 1: 4K, 2: 16K, 3: 64K */
#define IMAGE_FLAG_PAGES_4K (1ull << 1)
#define IMAGE_SIZE_MAX	    (1ull << 30)
#define PAGE		    4096ull

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

int arm64_image_parse(const uint8_t *hdr, uint64_t file_size, struct arm64_image *out, char *err,
		      size_t errlen)
{
	uint32_t magic;
	memcpy(&magic, hdr + 56, sizeof(magic));
	if (file_size < ARM64_IMAGE_HDR_LEN || le32toh(magic) != ARM64_IMAGE_MAGIC)
		return errbuf_fail(err, errlen, -EINVAL,
				   "the kernel is not an arm64 Image (no \"ARM\\x64\" magic at "
				   "byte 56): give the kernel build's arch/arm64/boot/Image");
	struct arm64_image k = {
		.text_offset = le64_at(hdr + 8),
		.image_size = le64_at(hdr + 16),
		.flags = le64_at(hdr + 24),
	};
	/* Kernels before 3.17 leave image_size 0 and load at 0x80000; none is supported. */
	const char *bad = k.flags & IMAGE_FLAG_BE ? "is big-endian"
			  : (k.flags & IMAGE_FLAG_PAGES) &&
					  (k.flags & IMAGE_FLAG_PAGES) != IMAGE_FLAG_PAGES_4K
				  ? "wants a page size other than 4 KiB"
			  : k.text_offset % PAGE || k.text_offset >= ARM64_KERNEL_ALIGN
				  ? "has a text offset that is not a multiple of 4 KiB under 2 MiB"
			  : k.image_size == 0 ? "has no effective size (a kernel older than 3.17)"
			  : k.image_size < file_size || k.image_size > IMAGE_SIZE_MAX
				  ? "claims an effective size smaller than its file or over 1 GiB"
				  : NULL;
	if (bad)
		return errbuf_fail(err, errlen, -EINVAL, "the arm64 Image %s", bad);
	*out = k;
	return 0;
}

int arm64_place(uint64_t ram_base, uint64_t ram_size, const struct arm64_image *k,
		uint64_t initrd_size, struct arm64_place *out, char *err, size_t errlen)
{
	struct arm64_place p = { .kernel = ram_base + k->text_offset };
	/* All sums below stay small: RAM, the kernel and the initrd are each bounded. */
	if (ram_base % ARM64_KERNEL_ALIGN || ram_size % ARM64_KERNEL_ALIGN ||
	    ram_size < 2 * ARM64_KERNEL_ALIGN || ram_size > (1ull << 40) ||
	    initrd_size > (1ull << 40))
		return errbuf_fail(err, errlen, -EINVAL, "RAM or the initrd is out of range");
	p.kernel_end = p.kernel + k->image_size;
	p.fdt = ram_base + ram_size - ARM64_KERNEL_ALIGN;
	uint64_t below = p.fdt;
	if (initrd_size) {
		uint64_t len = (initrd_size + PAGE - 1) & ~(PAGE - 1);
		if (len > p.fdt - ram_base)
			below = 0;
		else
			below = p.initrd = p.fdt - len;
	}
	if (below < p.kernel_end)
		return errbuf_fail(err, errlen, -ENOSPC,
				   "the kernel (%llu KiB), the initrd (%llu KiB) and the device "
				   "tree (2 MiB) do not fit in %llu MiB of RAM: give more --mem",
				   (unsigned long long)(k->image_size >> 10),
				   (unsigned long long)(initrd_size >> 10),
				   (unsigned long long)(ram_size >> 20));
	*out = p;
	return 0;
}
