/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/vmem.h: the front end's memory regions (SET_MEM_TABLE) mapped into the back end, and
 * the one checked helper that turns a guest address and length into a host pointer. */
#ifndef BULKHEAD_VSOCK_VMEM_H
#define BULKHEAD_VSOCK_VMEM_H

#include <stddef.h>
#include <stdint.h>

#define VMEM_MAX_REGIONS 8

struct vmem_region {
	uint64_t gpa;  /* guest-physical start */
	uint64_t uva;  /* the front end's own virtual address (vring addresses use these) */
	uint64_t size; /* bytes */
	uint8_t *host; /* our mapping of the region's first byte */
	void *map;     /* what munmap() gets back: the mapping includes mmap_offset */
	size_t map_len;
};

struct vmem {
	unsigned nregions;
	struct vmem_region r[VMEM_MAX_REGIONS];
};

enum vmem_space { VMEM_GPA, VMEM_UVA };

/* Adds a region that is already mapped at host (tests use plain buffers). Refuses (-EINVAL)
 * zero or wrapping ranges and ranges overlapping another region in the same space, and
 * (-ENOSPC) more than VMEM_MAX_REGIONS. map/map_len may be NULL/0 (not ours to unmap). */
int vmem_add(struct vmem *m, uint64_t gpa, uint64_t uva, uint64_t size, uint8_t *host, void *map,
	     size_t map_len);

/* Maps fd [offset, offset+size) shared and adds it. Returns 0 or -errno. The fd is not kept. */
int vmem_map_fd(struct vmem *m, int fd, uint64_t gpa, uint64_t uva, uint64_t size, uint64_t offset);

/* Unmaps everything we mapped and empties the table. */
void vmem_clear(struct vmem *m);

/*
 * THE guest-memory check: a host pointer to [addr, addr+len) in the given address space, or
 * NULL unless the whole range lies inside one region. Overflow-safe for any addr and len; len 0
 * is refused. Nothing else in bulkhead-vsock turns a guest-supplied address into a pointer.
 */
void *vmem_ptr(const struct vmem *m, enum vmem_space space, uint64_t addr, uint64_t len);

#endif
