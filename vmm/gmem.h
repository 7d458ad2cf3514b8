/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/gmem.h: guest RAM — one sealed memfd (shareable with vhost-user back ends) mapped into
 * this process, exposed to the guest as one or more guest-physical windows. */
#ifndef BULKHEAD_VMM_GMEM_H
#define BULKHEAD_VMM_GMEM_H

#include <linux/falloc.h>
#include <stdint.h>

#define GMEM_MAX_REGIONS 4

struct gmem_region {
	uint64_t gpa;	 /* guest-physical start */
	uint64_t size;	 /* bytes, page multiple */
	uint64_t offset; /* into the memfd (and the host mapping) */
};

struct gmem {
	int fd;	       /* memfd, O_CLOEXEC, sealed against shrinking and growing */
	uint8_t *host; /* mapping of the whole memfd, MAP_SHARED|MAP_NORESERVE */
	uint64_t size; /* memfd size */
	unsigned nregions;
	struct gmem_region regions[GMEM_MAX_REGIONS];
};

/* Creates, sizes, seals and maps the memfd. size: a non-zero page multiple. Returns 0 or
 * -errno; on failure *gm is left safe to gmem_destroy(). */
int gmem_init(struct gmem *gm, uint64_t size);
void gmem_destroy(struct gmem *gm);
/* Gives every page of guest RAM back to the kernel (a hole punched in the memfd), for a back
 * end that still maps it and outlives this VMM: a saved guest's RAM is on disk, and costs
 * nothing here any more. Returns 0 or -errno. */
#define GMEM_RELEASE_MODE (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) /* fallocate's */
int gmem_release(const struct gmem *gm);

/* Exposes memfd bytes [offset, offset+size) at guest-physical gpa. Refuses (-EINVAL) unaligned,
 * wrapping, out-of-memfd or overlapping windows, and (-ENOSPC) more than GMEM_MAX_REGIONS. */
int gmem_add_region(struct gmem *gm, uint64_t gpa, uint64_t offset, uint64_t size);

/* Registers every window with KVM_SET_USER_MEMORY_REGION (slots 0..n-1). Returns 0 or -errno. */
int gmem_register(const struct gmem *gm, int vm_fd);

/*
 * THE guest-memory check: a host pointer to guest-physical [gpa, gpa+len), or NULL unless the
 * whole range lies inside one window. Overflow-safe for any gpa and len; len 0 is refused
 * (callers skip empty buffers). Nothing else in bulkhead-vmm turns a guest address into a
 * pointer: every guest-controlled address and length goes through here first.
 */
void *gmem_ptr(const struct gmem *gm, uint64_t gpa, uint64_t len);

/* Copies through gmem_ptr(); return 0, or -EFAULT when the range is not all RAM. */
int gmem_write(const struct gmem *gm, uint64_t gpa, const void *src, uint64_t len);
int gmem_read(const struct gmem *gm, uint64_t gpa, void *dst, uint64_t len);

#endif
