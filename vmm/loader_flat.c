/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/loader_flat.c: the simplest loader — file bytes to one RAM range, bounds-checked. */
#include "vmm/loader_flat.h"

#include "lib/io.h"
#include "vmm/log.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

int loader_flat_load(const struct gmem *gm, const struct loader_src *src, uint64_t gpa,
		     uint64_t *size_out)
{
	char what[512], name[32];
	const char *n = loader_src_name(src, name, sizeof(name));
	uint64_t size;
	int err = 0;

	int fd = loader_src_open(src, "guest image", LOADER_IMAGE_MAX, &size);
	if (fd < 0)
		return fd;
	uint8_t *dst = gmem_ptr(gm, gpa, size);
	if (!dst) {
		err = EFBIG;
		snprintf(what, sizeof(what),
			 "guest image %s (%llu bytes) does not fit in RAM at 0x%llx", n,
			 (unsigned long long)size, (unsigned long long)gpa);
		vmm_log_setup(what, 0, "give the guest more --mem");
		goto out;
	}
	/* pread: from offset 0, wherever a given descriptor's position stands. */
	ssize_t r = io_pread_full(fd, dst, (size_t)size, 0);
	if (r < 0 || (uint64_t)r < size) {
		err = r < 0 ? (int)-r : EIO;
		snprintf(what, sizeof(what), "cannot read guest image %s", n);
		vmm_log_setup(what, err, r >= 0 ? "the file shrank while being read" : NULL);
		goto out;
	}
	if (size_out)
		*size_out = size;
out:
	if (src->path)
		close(fd);
	return -err;
}
