/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/loader_flat.h: loads a flat binary (a test guest) into guest RAM at a fixed address. */
#ifndef BULKHEAD_VMM_LOADER_FLAT_H
#define BULKHEAD_VMM_LOADER_FLAT_H

#include "vmm/gmem.h"
#include "vmm/loader.h"

#include <stdint.h>

/* Copies the whole file to guest-physical gpa. Set-up tier: prints what failed and returns
 * -errno (-EFBIG when it does not fit in RAM, -ENOEXEC when empty). */
int loader_flat_load(const struct gmem *gm, const struct loader_src *src, uint64_t gpa,
		     uint64_t *size_out);

#endif
