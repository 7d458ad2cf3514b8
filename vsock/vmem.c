/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/vmem.c: guest memory as the back end sees it — regions from SET_MEM_TABLE and the
 * single overflow-safe translation every guest address goes through. */
#include "vsock/vmem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static uint64_t region_start(const struct vmem_region *r, enum vmem_space space)
{
	return space == VMEM_GPA ? r->gpa : r->uva;
}

/* Both ranges are known not to wrap. */
static int overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int vmem_add(struct vmem *m, uint64_t gpa, uint64_t uva, uint64_t size, uint8_t *host, void *map,
	     size_t map_len)
{
	if (size == 0 || gpa + size < gpa || uva + size < uva || !host)
		return -EINVAL;
	if (m->nregions >= VMEM_MAX_REGIONS)
		return -ENOSPC;
	for (unsigned i = 0; i < m->nregions; i++) {
		const struct vmem_region *r = &m->r[i];
		if (overlaps(gpa, size, r->gpa, r->size) || overlaps(uva, size, r->uva, r->size))
			return -EINVAL;
	}
	m->r[m->nregions++] = (struct vmem_region){
		.gpa = gpa,
		.uva = uva,
		.size = size,
		.host = host,
		.map = map,
		.map_len = map_len,
	};
	return 0;
}

int vmem_map_fd(struct vmem *m, int fd, uint64_t gpa, uint64_t uva, uint64_t size, uint64_t offset)
{
	/* mmap wants a page-aligned offset; the front end's mmap_offset need not be one, so map
	 * from 0 and step over it (as other back ends do). */
	if (size == 0 || offset + size < offset || offset + size > SIZE_MAX)
		return -EINVAL;
	size_t len = (size_t)(offset + size);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	int err = vmem_add(m, gpa, uva, size, (uint8_t *)p + offset, p, len);
	if (err)
		munmap(p, len);
	return err;
}

void vmem_clear(struct vmem *m)
{
	for (unsigned i = 0; i < m->nregions; i++)
		if (m->r[i].map)
			munmap(m->r[i].map, m->r[i].map_len);
	memset(m, 0, sizeof(*m));
}

void *vmem_ptr(const struct vmem *m, enum vmem_space space, uint64_t addr, uint64_t len)
{
	if (len == 0)
		return NULL;
	for (unsigned i = 0; i < m->nregions; i++) {
		const struct vmem_region *r = &m->r[i];
		uint64_t start = region_start(r, space);
		/* Written so that nothing can wrap: addr >= start, then offsets within size. */
		if (addr < start)
			continue;
		uint64_t off = addr - start;
		if (off >= r->size || len > r->size - off)
			continue;
		return r->host + off;
	}
	return NULL;
}
