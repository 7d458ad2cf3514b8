/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_snapshot.c: libFuzzer target for the snapshot file as --restore-fd reads
 * it (vmm/snapshot.c), and the device states a restore takes from it.
 *
 * The input is the file. When its last byte is odd, the harness first gives it valid CRCs
 * for the header, the sections and the RAM table wherever its header says they are (clamped
 * to the input), so the layout checks behind the CRCs are reached, not only the CRCs. Then
 * snap_open; on success every section type is looked up (each payload must lie inside the
 * state), the UART and i8042 states are given to their restore checks, and a RAM
 * of at most 16 MiB is loaded into a fresh guest RAM (every extent inside it). */
#include "vmm/gmem.h"
#include "vmm/snapshot.h"
#include "vmm/uart.h"
#include "vmm/x86/i8042.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static int fd = -1;

static uint32_t crc_of(const uint8_t *data, size_t size, uint64_t off, uint64_t len)
{
	if (off > size)
		return 0;
	if (len > size - off)
		len = size - off;
	return (uint32_t)crc32(0, data + off, (uInt)len);
}

static void reseal(uint8_t *buf, size_t size)
{
	struct snap_header h;
	if (size < sizeof(h))
		return;
	memcpy(&h, buf, sizeof(h));
	h.state_crc = crc_of(buf, size, h.state_off, h.state_len);
	if (h.ext_count <= size / sizeof(struct snap_extent))
		h.ext_crc = crc_of(buf, size, h.ext_off, h.ext_count * sizeof(struct snap_extent));
	h.header_crc =
		(uint32_t)crc32(0, (const Bytef *)&h, offsetof(struct snap_header, header_crc));
	memcpy(buf, &h, sizeof(h));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[1 << 20];
	char err[256];
	struct snap_in in;

	if (size > sizeof(buf))
		return 0;
	if (fd < 0) {
		char path[] = "/tmp/fuzz_snapshot.XXXXXX"; /* mkstemp: mode 0600, ours */
		fd = mkstemp(path);
		assert(fd >= 0);
		unlink(path);
	}
	memcpy(buf, data, size);
	if (size && (data[size - 1] & 1))
		reseal(buf, size);
	if (ftruncate(fd, 0) || pwrite(fd, buf, size, 0) != (ssize_t)size)
		abort();
	if (snap_open(fd, &in, err, sizeof(err)) != 0) {
		assert(err[0]); /* every refusal says why */
		return 0;
	}
	assert(in.hdr.mem_size && in.hdr.mem_size % SNAP_PAGE == 0);
	for (uint32_t type = 0; type < 24; type++)
		for (uint32_t idx = 0; idx < 4; idx++) {
			uint32_t len = 0;
			const uint8_t *p = snap_find(&in, type, idx, &len);
			if (!p)
				continue;
			assert(p >= in.state && p + len <= in.state + in.hdr.state_len);
			volatile uint8_t sink = len ? p[len - 1] : 0; /* ASan: inside the block */
			(void)sink;
			if (len == sizeof(struct uart_state)) {
				struct uart u = { 0 };
				struct uart_state s;
				memcpy(&s, p, sizeof(s));
				(void)uart_restore(&u, &s);
			}
			if (len == sizeof(struct i8042_state)) {
				struct i8042 k = { 0 };
				struct i8042_state s;
				memcpy(&s, p, sizeof(s));
				(void)i8042_restore(&k, &s);
			}
		}
	if (in.hdr.mem_size <= (16u << 20)) {
		struct gmem gm;
		if (gmem_init(&gm, in.hdr.mem_size) == 0) {
			(void)snap_load_mem(fd, &in, &gm, err, sizeof(err));
			gmem_destroy(&gm);
		}
	}
	snap_close(&in);
	return 0;
}
