/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vmm/snapshot.h: the snapshot file — one saved VM in one file, written by `--snapshot-fd`
 * and read by `--restore-fd` (vmm/snapshot_vm.c decides what goes in it).
 *
 *   0          struct snap_header (its own CRC-32 last), padded to one page
 *   state_off  sections: struct snap_section + payload (padded to 8), state_len bytes
 *   ext_off    struct snap_extent[ext_count]: the guest RAM that holds data, sorted
 *   mem_off    guest RAM: byte X of RAM at mem_off + X, only inside the extents (a sparse
 *              file: RAM never written is a hole, costs no disk and is not read back)
 *
 * Integers are the host's byte order, which the header's `arch` pins (both architectures
 * bulkhead-vmm knows are little-endian); section payloads are the kernel's KVM structures
 * of that architecture, whose layouts are ABI. Every part has a CRC-32 (zlib's): the header,
 * the sections, the extent table, and the RAM as read back. A file is trusted only whole:
 * snap_open checks all but the RAM before anything is created, snap_load_mem checks the RAM
 * before any vCPU runs. A snapshot holds a guest's memory: it must be mode 0600 (no group or
 * other bits) and owned by the user restoring it; anything else is refused.
 */
#ifndef BULKHEAD_VMM_SNAPSHOT_H
#define BULKHEAD_VMM_SNAPSHOT_H

#include "vmm/gmem.h"

#include <stddef.h>
#include <stdint.h>

#define SNAP_MAGIC	  "BHVMSNAP"
#define SNAP_VERSION	  1
#define SNAP_ARCH_X86_64  1
#define SNAP_PAGE	  4096ULL
#define SNAP_STATE_MAX	  (8u << 20) /* sections: vCPUs and devices, far below this */
#define SNAP_SECTIONS_MAX 4096
#define SNAP_MEM_MAX	  (1ULL << 40) /* far above any VM bulkhead-vmm makes */

struct snap_header {
	char magic[8];
	uint32_t version;
	uint32_t arch;
	uint32_t mode;	/* VMM_MODE_* the VM ran in */
	uint32_t ncpus; /* vCPUs */
	uint64_t mem_size;
	uint64_t state_off, state_len;
	uint64_t ext_off, ext_count;
	uint64_t mem_off;
	uint64_t mem_bytes; /* sum of the extents' lengths */
	uint32_t state_crc, ext_crc, mem_crc;
	uint32_t header_crc; /* of every byte before it */
};

struct snap_extent {
	uint64_t off, len; /* into guest RAM; page multiples */
};

struct snap_section {
	uint32_t type;	/* SNAP_SEC_* (vmm/snapshot_vm.h) */
	uint32_t index; /* which one of its type: the vCPU's id, 0 for single ones */
	uint32_t len;	/* payload bytes (the payload is padded to 8) */
	uint32_t pad;
};

/* Sections being gathered in a buffer sized at set-up (the save runs under the main
 * thread's allow-list, which has no mmap). */
struct snap_out {
	uint8_t *buf;
	size_t len, cap;
	unsigned nsections;
};

/* Allocates cap bytes (at most SNAP_STATE_MAX). 0 or -errno. */
int snap_out_init(struct snap_out *s, size_t cap);
void snap_out_free(struct snap_out *s);
/* Appends one section. -ENOSPC when it does not fit, -EINVAL for a bad length. */
int snap_put(struct snap_out *s, uint32_t type, uint32_t index, const void *data, uint32_t len);

/* Writes the whole file to fd (a regular file, truncated first): sections, the extents of
 * gm's memfd that hold data (SEEK_DATA/SEEK_HOLE), the RAM, and last the header, so a file
 * cut short by a crash never has a valid one. Syncs before returning. hdr gives arch, mode,
 * ncpus; the rest is filled in. Returns 0 or -errno after saying what failed in err. */
int snap_write(int fd, struct snap_header *hdr, const struct snap_out *s, const struct gmem *gm,
	       char *err, size_t errlen);

/* A snapshot checked whole but for its RAM. */
struct snap_in {
	struct snap_header hdr;
	uint8_t *state; /* state_len bytes */
	struct snap_extent *ext;
	uint64_t file_size;
};

/* Reads and checks fd: owner and mode, the header (magic, version, arch, CRC, offsets
 * inside the file), the sections (CRC, each inside the state, their count), and the
 * extent table (CRC, sorted, page-aligned, inside mem_size, inside the file). Returns 0, or
 * -errno with one sentence in err (the file is then not used at all). */
int snap_open(int fd, struct snap_in *in, char *err, size_t errlen);
void snap_close(struct snap_in *in);

/* The sections in their order: *at starts at 0; each call gives the next one's header in
 * *sec and returns its payload, or NULL after the last. */
const void *snap_next(const struct snap_in *in, uint64_t *at, struct snap_section *sec);

/* The payload of section (type, index), its length in *len; NULL when absent. */
const void *snap_find(const struct snap_in *in, uint32_t type, uint32_t index, uint32_t *len);

/* Copies the RAM into gm (fresh, zero, of hdr.mem_size) and checks its CRC. 0 or -errno
 * (-EBADMSG: damaged) with err said. */
int snap_load_mem(int fd, const struct snap_in *in, const struct gmem *gm, char *err,
		  size_t errlen);

#endif
