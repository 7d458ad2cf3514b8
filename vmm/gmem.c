/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/gmem.c: guest RAM in a sealed memfd, and the one bounds check for guest addresses. */
#include "vmm/gmem.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define GMEM_PAGE 4096ULL

int gmem_init(struct gmem *gm, uint64_t size)
{
	int err;

	memset(gm, 0, sizeof(*gm));
	gm->fd = -1;
	if (size == 0 || size % GMEM_PAGE || size > (uint64_t)SIZE_MAX / 2)
		return -EINVAL;

	gm->fd = memfd_create("bulkhead-guest-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (gm->fd < 0)
		return -errno;
	if (ftruncate(gm->fd, (off_t)size) < 0)
		goto fail;
	/* Back ends map this fd later: a shrink would turn their accesses into SIGBUS, so the
	 * size is fixed for the VM's life. F_SEAL_SEAL stops anyone loosening that. */
	if (fcntl(gm->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	/* NORESERVE: a 4 GiB guest that touches 20 MiB costs 20 MiB. */
	void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		       gm->fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	gm->host = p;
	gm->size = size;
	return 0;

fail:
	err = -errno;
	gmem_destroy(gm);
	return err;
}

void gmem_destroy(struct gmem *gm)
{
	if (gm->host)
		munmap(gm->host, (size_t)gm->size);
	if (gm->fd >= 0)
		close(gm->fd);
	memset(gm, 0, sizeof(*gm));
	gm->fd = -1;
}

int gmem_release(const struct gmem *gm)
{
	if (fallocate(gm->fd, GMEM_RELEASE_MODE, 0, (off_t)gm->size) < 0)
		return -errno;
	return 0;
}

int gmem_add_region(struct gmem *gm, uint64_t gpa, uint64_t offset, uint64_t size)
{
	if (gm->nregions >= GMEM_MAX_REGIONS)
		return -ENOSPC;
	if (size == 0 || gpa % GMEM_PAGE || offset % GMEM_PAGE || size % GMEM_PAGE)
		return -EINVAL;
	if (gpa + size < gpa || offset > gm->size || size > gm->size - offset)
		return -EINVAL;
	for (unsigned i = 0; i < gm->nregions; i++) {
		const struct gmem_region *r = &gm->regions[i];
		/* Half-open intervals, written so that neither end can wrap. */
		if (gpa < r->gpa + r->size && r->gpa < gpa + size)
			return -EINVAL;
	}
	gm->regions[gm->nregions++] = (struct gmem_region){ gpa, size, offset };
	return 0;
}

int gmem_register(const struct gmem *gm, int vm_fd)
{
	for (unsigned i = 0; i < gm->nregions; i++) {
		const struct gmem_region *r = &gm->regions[i];
		struct kvm_userspace_memory_region kr = {
			.slot = i,
			.guest_phys_addr = r->gpa,
			.memory_size = r->size,
			.userspace_addr = (uint64_t)(uintptr_t)(gm->host + r->offset),
		};
		if (ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &kr) < 0)
			return -errno;
	}
	return 0;
}

void *gmem_ptr(const struct gmem *gm, uint64_t gpa, uint64_t len)
{
	if (len == 0)
		return NULL;
	for (unsigned i = 0; i < gm->nregions; i++) {
		const struct gmem_region *r = &gm->regions[i];
		/* No gpa+len: compare offsets within the window so nothing can wrap. */
		if (gpa < r->gpa || len > r->size)
			continue;
		uint64_t off = gpa - r->gpa;
		if (off > r->size - len)
			continue;
		return gm->host + r->offset + off;
	}
	return NULL;
}

int gmem_write(const struct gmem *gm, uint64_t gpa, const void *src, uint64_t len)
{
	void *p = gmem_ptr(gm, gpa, len);
	if (!p)
		return -EFAULT;
	memcpy(p, src, (size_t)len);
	return 0;
}

int gmem_read(const struct gmem *gm, uint64_t gpa, void *dst, uint64_t len)
{
	const void *p = gmem_ptr(gm, gpa, len);
	if (!p)
		return -EFAULT;
	memcpy(dst, p, (size_t)len);
	return 0;
}
