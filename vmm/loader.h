/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/loader.h: kernel images in host memory — mapping a file with a size limit, and the
 * ELF64 loader (arch-independent). Loaders check every size and offset the file claims and
 * either load everything or touch nothing. */
#ifndef BULKHEAD_VMM_LOADER_H
#define BULKHEAD_VMM_LOADER_H

#include "vmm/gmem.h"

#include <stddef.h>
#include <stdint.h>

/* Largest kernel or initrd file we accept: far above any sane image, far below RAM. */
#define LOADER_IMAGE_MAX     (512ULL << 20)
#define LOADER_ELF_MAX_PHDRS 64

/* Where an image comes from: a path to open, or (path NULL) a descriptor the launcher
 * opened, read from offset 0 and left open (its owner closes it). */
struct loader_src {
	const char *path;
	int fd;
};

/* For messages: the path, or "descriptor N". */
const char *loader_src_name(const struct loader_src *src, char *buf, size_t len);
/* Opens (or takes) the source and checks it is a non-empty regular file of at most max
 * bytes; fills *size. Returns the fd to read (close it only if src->path), or -errno after
 * one line naming the file ("what": "kernel", "initrd", "guest image"). */
int loader_src_open(const struct loader_src *src, const char *what, uint64_t max, uint64_t *size);

struct loader_image {
	const uint8_t *data; /* read-only mapping, or NULL for an empty file */
	size_t len;
};

/* Set-up tier: maps the source read-only; refuses empty, non-regular and oversized (> max)
 * files, printing one line naming the file ("what" says which: "kernel", "initrd"). */
int loader_image_map(const struct loader_src *src, const char *what, uint64_t max,
		     struct loader_image *im);
void loader_image_unmap(struct loader_image *im);

struct loader_result {
	uint64_t entry; /* guest-physical entry point */
	uint64_t start; /* lowest guest-physical byte written */
	uint64_t end;	/* first byte after the highest one written (or reserved, e.g. bss) */
};

/*
 * Loads an ELF64 x86-64 executable: every PT_LOAD at its physical address (p_paddr),
 * file bytes copied and the rest of p_memsz zeroed; entry = e_entry, which must lie in a
 * loaded segment. Segments must sit at or above min_gpa, inside RAM, and not overlap.
 * Returns 0, or -ENOEXEC (not such an ELF, truncated, inconsistent), -EFBIG (too big or
 * outside RAM), -EINVAL (overlapping segments, below min_gpa), with one line in err.
 */
int loader_elf_load(const struct gmem *gm, const uint8_t *img, size_t len, uint64_t min_gpa,
		    struct loader_result *out, char *err, size_t errlen);

#endif
