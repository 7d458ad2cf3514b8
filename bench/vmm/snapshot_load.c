/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/vmm/snapshot_load.c: what loading a snapshot's RAM costs per MiB on this host, without
 * KVM (`make bench-snapshot-load`): a guest RAM of MIB MiB with USED MiB written is saved
 * (vmm/snapshot.c), then, RUNS times each, alternating:
 *   - restore: snap_open + snap_load_mem into a fresh guest RAM (a new memfd, as a restoring
 *     bulkhead-vmm has): the file checked whole, the RAM read and its CRC checked;
 *   - reference: the same bytes copied into a fresh memfd by the kernel (sendfile, one per
 *     extent) with no check: the floor of any copy-in restore.
 * Prints the medians, their ratio and the cost per MiB in use. The file is in the page cache
 * (a restore of a template just written, or of one restored before).
 *
 * Usage: snapshot-load [MIB [USED [RUNS]]]   (defaults 256 32 15)
 */
#include "vmm/gmem.h"
#include "vmm/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	unsigned long used = argc > 2 ? strtoul(argv[2], NULL, 10) : 32;
	int runs = argc > 3 ? atoi(argv[3]) : 15;
	char path[] = "/tmp/snapshot-load.XXXXXX", err[200];
	struct gmem gm;
	struct snap_out out;
	double tr[64], tf[64];

	if (!mib || used > mib || runs < 1 || runs > 64) {
		fprintf(stderr, "usage: snapshot-load [MIB [USED [RUNS]]] (USED <= MIB, RUNS 1..64)\n");
		return 2;
	}
	int fd = mkstemp(path);
	if (fd < 0 || gmem_init(&gm, mib << 20) || snap_out_init(&out, 4096))
		return 1;
	unlink(path);
	/* Every other 2 MiB chunk written, like a guest's scattered pages. */
	for (unsigned long i = 0, done = 0; done < used && i < mib; i += 2, done += 1)
		for (size_t b = 0; b < (1u << 20); b += 64)
			gm.host[(i << 20) + b] = (uint8_t)(b * 131 + i);
	struct snap_header h = { .arch = SNAP_ARCH_X86_64, .mode = 4, .ncpus = 1 };
	if (snap_put(&out, 1, 0, "x", 1) || snap_write(fd, &h, &out, &gm, err, sizeof(err))) {
		fprintf(stderr, "snapshot-load: %s\n", err);
		return 1;
	}
	gmem_destroy(&gm);
	for (int r = 0; r < runs; r++) {
		struct snap_in in;
		struct gmem g;
		double t0 = now_ms();
		if (snap_open(fd, &in, err, sizeof(err)) || gmem_init(&g, mib << 20) ||
		    snap_load_mem(fd, &in, &g, err, sizeof(err))) {
			fprintf(stderr, "snapshot-load: %s\n", err);
			return 1;
		}
		tr[r] = now_ms() - t0;
		gmem_destroy(&g);
		t0 = now_ms();
		if (gmem_init(&g, mib << 20))
			return 1;
		for (uint64_t e = 0; e < in.hdr.ext_count; e++) {
			off_t src = (off_t)(in.hdr.mem_off + in.ext[e].off);
			if (lseek(g.fd, (off_t)in.ext[e].off, SEEK_SET) < 0 ||
			    sendfile(g.fd, fd, &src, in.ext[e].len) != (ssize_t)in.ext[e].len)
				return 1;
		}
		tf[r] = now_ms() - t0;
		gmem_destroy(&g);
		snap_close(&in);
	}
	double r = median(tr, runs), f = median(tf, runs);
	printf("snapshot load, %lu MiB guest, %lu MiB in use, %d runs (medians):\n", mib, used, runs);
	printf("  restore (checked: layout, CRCs, RAM CRC): %.2f ms = %.3f ms/MiB\n", r,
	       r / (double)used);
	printf("  reference (the kernel copying the same extents, no check): %.2f ms = %.3f ms/MiB\n", f,
	       f / (double)used);
	printf("  restore / reference = %.2f\n", r / f);
	return 0;
}
