/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_snapshot.c: the snapshot file (vmm/snapshot.c) — a round trip keeps
 * sections and RAM exactly and skips RAM never written; every damage (each header byte, the
 * state, the RAM table, the RAM, a cut anywhere), another version or architecture, a layout
 * that lies with valid CRCs, and a file others can read are refused. Also the CPUID check of
 * a restore and the devices' state checks. */
#include "vmm/options.h"
#include "vmm/snapshot.h"
#include "vmm/snapshot_vm.h"
#include "vmm/uart.h"
#include "vmm/x86/i8042.h"
#include "vmm/x86/snapshot_arch.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#define MIB  (1ULL << 20)
#define SIZE (4 * MIB)

struct fixture {
	struct gmem gm;
	struct snap_out out;
	char path[64];
	int fd;
	uint64_t file_size;
};

static const char section_a[] = "the first section";
static const uint64_t section_b[3] = { 1, 2, 3 };

/* A VM's RAM with three written places (one spanning two pages), two sections, saved. */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[160];
	struct stat st;

	if (!f || gmem_init(&f->gm, SIZE) || snap_out_init(&f->out, 4096))
		return -1;
	memset(f->gm.host + 0x1000, 0xa5, 0x100);
	memset(f->gm.host + 2 * MIB - 8, 0x5a, 16);
	f->gm.host[SIZE - 1] = 0x42;
	if (snap_put(&f->out, 7, 0, section_a, sizeof(section_a)) ||
	    snap_put(&f->out, 9, 3, section_b, sizeof(section_b)))
		return -1;
	strcpy(f->path, "/tmp/test_vmm_snapshot.XXXXXX");
	f->fd = mkstemp(f->path);
	if (f->fd < 0)
		return -1;
	struct snap_header h = { .arch = SNAP_ARCH_X86_64, .mode = 2, .ncpus = 1 };
	if (snap_write(f->fd, &h, &f->out, &f->gm, err, sizeof(err)) || fstat(f->fd, &st))
		return -1;
	f->file_size = (uint64_t)st.st_size;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	close(f->fd);
	unlink(f->path);
	gmem_destroy(&f->gm);
	snap_out_free(&f->out);
	free(f);
	return 0;
}

static void flip(int fd, uint64_t off)
{
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= 0x10;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
}

/* Opens the file and loads its RAM into a fresh VM's: 0 or the first failure. */
static int open_and_load(int fd, char *err, size_t len)
{
	struct snap_in in;
	struct gmem gm;
	int rc = snap_open(fd, &in, err, len);
	if (rc)
		return rc;
	if ((rc = gmem_init(&gm, in.hdr.mem_size))) {
		snap_close(&in);
		return rc;
	}
	rc = snap_load_mem(fd, &in, &gm, err, len);
	gmem_destroy(&gm);
	snap_close(&in);
	return rc;
}

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	struct snap_in in;
	struct gmem gm;
	char err[160];
	uint32_t len;

	assert_int_equal(snap_open(f->fd, &in, err, sizeof(err)), 0);
	assert_int_equal(in.hdr.mem_size, SIZE);
	assert_int_equal(in.hdr.mode, 2);
	/* Only the pages written: 1 + 2 + 1, not the 1024 of the VM. */
	assert_int_equal(in.hdr.mem_bytes, 4 * SNAP_PAGE);
	const char *a = snap_find(&in, 7, 0, &len);
	assert_non_null(a);
	assert_int_equal(len, sizeof(section_a));
	assert_memory_equal(a, section_a, sizeof(section_a));
	const uint64_t *b = snap_find(&in, 9, 3, &len);
	assert_non_null(b);
	assert_memory_equal(b, section_b, sizeof(section_b));
	assert_null(snap_find(&in, 9, 0, &len));
	assert_int_equal(gmem_init(&gm, SIZE), 0);
	assert_int_equal(snap_load_mem(f->fd, &in, &gm, err, sizeof(err)), 0);
	assert_memory_equal(gm.host, f->gm.host, SIZE);
	gmem_destroy(&gm);

	/* Into a VM of another size: refused. */
	assert_int_equal(gmem_init(&gm, 2 * SIZE), 0);
	assert_int_equal(snap_load_mem(f->fd, &in, &gm, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "RAM"));
	gmem_destroy(&gm);
	snap_close(&in);
}

static void test_every_header_byte(void **state)
{
	struct fixture *f = *state;
	char err[160];

	for (uint64_t off = 0; off < sizeof(struct snap_header); off++) {
		flip(f->fd, off);
		assert_int_not_equal(open_and_load(f->fd, err, sizeof(err)), 0);
		flip(f->fd, off);
	}
	assert_int_equal(open_and_load(f->fd, err, sizeof(err)), 0);
}

static void test_damage(void **state)
{
	struct fixture *f = *state;
	struct snap_in in;
	char err[160];

	assert_int_equal(snap_open(f->fd, &in, err, sizeof(err)), 0);
	const uint64_t where[][2] = {
		{ in.hdr.state_off + 20, -EBADMSG },		 /* a section's payload */
		{ in.hdr.ext_off + 3, -EBADMSG },		 /* the RAM table */
		{ in.hdr.mem_off + 0x1000 + 7, -EBADMSG },	 /* the RAM */
		{ in.hdr.mem_off + SIZE - 1, -EBADMSG },	 /* its last byte */
		{ in.hdr.mem_off + 2 * MIB - 8 + 12, -EBADMSG }, /* across a page */
	};
	const char *const says[] = { "state is damaged", "RAM table is damaged", "RAM is damaged",
				     "RAM is damaged", "RAM is damaged" };
	snap_close(&in);
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		flip(f->fd, where[i][0]);
		assert_int_equal(open_and_load(f->fd, err, sizeof(err)), (int)where[i][1]);
		assert_non_null(strstr(err, says[i]));
		flip(f->fd, where[i][0]);
	}
}

/* RAM in use above the split threshold, loaded by two threads where two CPUs are ours: the
 * halves land where they belong, and damage in either half, or on the page where they meet,
 * is found by the combined CRC. */
static void test_two_halves(void **state)
{
	(void)state;
	const uint64_t size = 32 * MIB;
	struct gmem gm, back;
	struct snap_out out;
	struct snap_in in;
	char path[] = "/tmp/test_vmm_snapshot.XXXXXX", err[160];
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(gmem_init(&gm, size), 0);
	assert_int_equal(snap_out_init(&out, 4096), 0);
	/* Every other 64 KiB, each a pattern of its own: 16 MiB in use in 256 extents. */
	for (uint64_t at = 0; at < size; at += 128 << 10)
		for (uint64_t b = 0; b < (64 << 10); b += 8)
			memcpy(gm.host + at + b, &(uint64_t){ at * 977 + b }, 8);
	struct snap_header h = { .arch = SNAP_ARCH_X86_64, .mode = 2, .ncpus = 1 };
	assert_int_equal(snap_put(&out, 7, 0, section_a, sizeof(section_a)), 0);
	assert_int_equal(snap_write(fd, &h, &out, &gm, err, sizeof(err)), 0);
	assert_int_equal(snap_open(fd, &in, err, sizeof(err)), 0);
	assert_int_equal(in.hdr.mem_bytes, 16 * MIB);
	assert_int_equal(gmem_init(&back, size), 0);
	assert_int_equal(snap_load_mem(fd, &in, &back, err, sizeof(err)), 0);
	assert_memory_equal(back.host, gm.host, size);
	gmem_destroy(&back);
	/* A byte of the first page, the bytes each side of the split (after 8 MiB in use,
	 * which is 16 MiB into the RAM), the last byte in use. */
	const uint64_t where[] = { 5, 16 * MIB - (64 << 10) - 1, 16 * MIB + 1,
				   size - (64 << 10) - 1 };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		flip(fd, in.hdr.mem_off + where[i]);
		assert_int_equal(gmem_init(&back, size), 0);
		assert_int_equal(snap_load_mem(fd, &in, &back, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "RAM is damaged"));
		gmem_destroy(&back);
		flip(fd, in.hdr.mem_off + where[i]);
	}
	snap_close(&in);
	snap_out_free(&out);
	gmem_destroy(&gm);
	close(fd);
}

static void test_cut_anywhere(void **state)
{
	struct fixture *f = *state;
	char err[160];
	uint8_t *copy = malloc(f->file_size);

	assert_non_null(copy);
	assert_int_equal(pread(f->fd, copy, f->file_size, 0), (ssize_t)f->file_size);
	/* Every page boundary and a few bytes around the parts' ends. */
	for (uint64_t cut = 0; cut < f->file_size; cut += (cut % SNAP_PAGE) ? 1 : 97) {
		assert_int_equal(ftruncate(f->fd, (off_t)cut), 0);
		assert_int_not_equal(open_and_load(f->fd, err, sizeof(err)), 0);
		if (cut > 4 * SNAP_PAGE)
			cut += SNAP_PAGE * 16;
	}
	assert_int_equal(ftruncate(f->fd, 0), 0);
	assert_int_equal(pwrite(f->fd, copy, f->file_size, 0), (ssize_t)f->file_size);
	assert_int_equal(open_and_load(f->fd, err, sizeof(err)), 0);
	free(copy);
}

/* Rewrites the header with fresh CRCs: a file that lies but is not damaged. */
static void reseal(int fd, struct snap_header *h)
{
	h->header_crc =
		(uint32_t)crc32(0, (const Bytef *)h, offsetof(struct snap_header, header_crc));
	assert_int_equal(pwrite(fd, h, sizeof(*h), 0), (ssize_t)sizeof(*h));
}

static void test_lies_with_valid_crcs(void **state)
{
	struct fixture *f = *state;
	struct snap_header h0, h;
	char err[160];

	assert_int_equal(pread(f->fd, &h0, sizeof(h0), 0), (ssize_t)sizeof(h0));
	h = h0;
	h.version = SNAP_VERSION + 1;
	reseal(f->fd, &h);
	assert_int_equal(open_and_load(f->fd, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "format version 2"));
	h = h0;
	h.arch = 2;
	reseal(f->fd, &h);
	assert_int_equal(open_and_load(f->fd, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "another architecture"));
	/* Offsets and sizes that do not add up. */
	const size_t fields[] = {
		offsetof(struct snap_header, mem_size), offsetof(struct snap_header, state_len),
		offsetof(struct snap_header, ext_off),	offsetof(struct snap_header, ext_count),
		offsetof(struct snap_header, mem_off),	offsetof(struct snap_header, mem_bytes)
	};
	const uint64_t values[] = { 0, 1, UINT64_MAX, 1ULL << 62, 12345, SIZE + 1 };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
			h = h0;
			memcpy((uint8_t *)&h + fields[i], &values[v], sizeof(uint64_t));
			reseal(f->fd, &h);
			assert_int_not_equal(open_and_load(f->fd, err, sizeof(err)), 0);
		}
	/* A RAM size that still fits the table but not the VM's RAM: 1 page. */
	h = h0;
	h.mem_size = SNAP_PAGE;
	reseal(f->fd, &h);
	assert_int_equal(open_and_load(f->fd, err, sizeof(err)), -EBADMSG);
	reseal(f->fd, &h0);
	assert_int_equal(open_and_load(f->fd, err, sizeof(err)), 0);
}

static void test_others_may_not_read(void **state)
{
	struct fixture *f = *state;
	struct snap_in in;
	char err[160];

	for (mode_t m = 0604; m <= 0660; m += 056) {
		assert_int_equal(fchmod(f->fd, m), 0);
		assert_int_equal(snap_open(f->fd, &in, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "other users"));
	}
	assert_int_equal(fchmod(f->fd, 0600), 0);
	assert_int_equal(snap_open(f->fd, &in, err, sizeof(err)), 0);
	snap_close(&in);
}

static void test_out_buffer(void **state)
{
	(void)state;
	struct snap_out s;
	uint8_t big[100] = { 0 };

	assert_int_equal(snap_out_init(&s, 128), 0);
	assert_int_equal(snap_put(&s, 1, 0, big, 100), 0);     /* 16 + 104 */
	assert_int_equal(snap_put(&s, 1, 1, big, 1), -ENOSPC); /* 16 + 8 more: 144 */
	assert_int_equal(s.nsections, 1);
	snap_out_free(&s);
	assert_int_equal(snap_out_init(&s, SNAP_STATE_MAX + 1), -EINVAL);
}

static void put_entry(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx, uint32_t ebx, uint32_t ecx,
		      uint32_t edx)
{
	c->entries[c->nent++] = (struct kvm_cpuid_entry2){
		.function = fn, .index = idx, .ebx = ebx, .ecx = ecx, .edx = edx
	};
}

static void test_cpuid_missing(void **state)
{
	(void)state;
	struct {
		struct kvm_cpuid2 h;
		struct kvm_cpuid_entry2 e[8];
	} saved = { 0 }, host = { 0 };
	char buf[96];

	put_entry(&saved.h, 1, 0, 0x01000000, 0x80000001, 0x10);
	put_entry(&saved.h, 7, 0, 0x20, 0, 0);
	put_entry(&host.h, 1, 0, 0x00000000, 0x80000001, 0x10); /* another APIC ID: fine */
	put_entry(&host.h, 7, 0, 0x20 | 0x8, 0, 0);		/* more features: fine */
	assert_int_equal(x86_cpuid_missing(&saved.h, &host.h, buf, sizeof(buf)), 0);
	host.e[1].ebx = 0x8; /* AVX2 (7.0 EBX bit 5) gone */
	assert_int_equal(x86_cpuid_missing(&saved.h, &host.h, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "CPUID 0x7.0 EBX 0x00000020");
	host.h.nent = 1; /* no leaf 7 at all */
	assert_int_equal(x86_cpuid_missing(&saved.h, &host.h, buf, sizeof(buf)), 1);
}

/* Only states the guest's own writes could leave are taken (a red team's cases). */
static void test_device_states(void **state)
{
	(void)state;
	struct uart u = { 0 };
	const struct uart_state good = {
		.ier = 2, .lcr = 3, .fcr = 0xc1, .thr_ipending = 1, .irq_level = 1
	};
	struct uart_state us = good;
	struct i8042 k = { 0 };
	struct i8042_state ks = { .ctr = 0x47, .pending = 0x60, .obf = 1, .out = 0xaa };

	assert_int_equal(uart_restore(&u, &us), 0);
	assert_int_equal(u.lcr, 3);
	assert_true(u.thr_ipending);
	const struct {
		size_t off;
		uint8_t v;
	} bad[] = {
		{ offsetof(struct uart_state, ier), 0xf2 },    /* IER bits 4-7 */
		{ offsetof(struct uart_state, mcr), 0xe0 },    /* MCR bits 5-7 */
		{ offsetof(struct uart_state, fcr), 0x06 },    /* self-clearing FCR bits */
		{ offsetof(struct uart_state, irq_level), 0 }, /* line not what IER says */
		{ offsetof(struct uart_state, thr_ipending), 2 },
		{ offsetof(struct uart_state, pad) + 6, 1 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		us = good;
		((uint8_t *)&us)[bad[i].off] = bad[i].v;
		assert_int_equal(uart_restore(&u, &us), -EINVAL);
	}
	us = good;
	us.ier = 0; /* no interrupt enabled: the line must be low */
	assert_int_equal(uart_restore(&u, &us), -EINVAL);
	us.irq_level = 0;
	assert_int_equal(uart_restore(&u, &us), 0);

	assert_int_equal(i8042_restore(&k, &ks), 0);
	assert_int_equal(k.out, 0xaa);
	ks.pending = 0xfe; /* no command that waits for data */
	assert_int_equal(i8042_restore(&k, &ks), -EINVAL);
	ks.pending = 0xd3;
	ks.obf = 3;
	assert_int_equal(i8042_restore(&k, &ks), -EINVAL);
}

/* What a restore checks before the VM exists (snapshot_restore_open): every section known,
 * of its size and a valid index, device states their devices could be in, none missing. */
static int contents(const struct snap_out *out)
{
	struct gmem gm;
	struct snap_in in;
	struct vmm_opts o = { .restore_fd = -1 };
	char path[] = "/tmp/test_vmm_snapshot.XXXXXX", err[160];
	int fd = mkstemp(path), rc;

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(gmem_init(&gm, SIZE), 0);
	struct snap_header h = { .arch = SNAP_ARCH_X86_64, .mode = VMM_MODE_MACHINE, .ncpus = 2 };
	assert_int_equal(snap_write(fd, &h, out, &gm, err, sizeof(err)), 0);
	gmem_destroy(&gm);
	o.restore_fd = fd;
	assert_int_equal(snap_open(fd, &in, err, sizeof(err)), 0); /* the layout is sound */
	snap_close(&in);
	rc = snapshot_restore_open(&o, &in);
	if (rc == 0) {
		assert_int_equal(o.cpus, 2);
		assert_int_equal(o.mode, VMM_MODE_MACHINE);
		snap_close(&in);
	}
	close(fd);
	return rc;
}

static void test_contents(void **state)
{
	(void)state;
	static struct x86_vcpu_state vcpu;
	static struct x86_vm_state vm = { .irqchip = 1 };
	static const struct uart_state uart = { .lcr = 3 };
	static const struct i8042_state kbd = { .ctr = 0x47 };
	static uint8_t junk[sizeof(struct uart_state)];
	struct snap_out out;

	assert_int_equal(snap_out_init(&out, 1 << 20), 0);
	/* A whole machine: the VM, two vCPUs, the UART and i8042. */
	const struct {
		uint32_t type, index;
		const void *p;
		uint32_t len;
	} whole[] = {
		{ SNAP_SEC_VM, 0, &vm, sizeof(vm) },
		{ SNAP_SEC_VCPU, 0, &vcpu, sizeof(vcpu) },
		{ SNAP_SEC_VCPU, 1, &vcpu, sizeof(vcpu) },
		{ SNAP_SEC_UART, 0, &uart, sizeof(uart) },
		{ SNAP_SEC_I8042, 0, &kbd, sizeof(kbd) },
	};
	const size_t n = sizeof(whole) / sizeof(whole[0]);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(
			snap_put(&out, whole[i].type, whole[i].index, whole[i].p, whole[i].len), 0);
	assert_int_equal(contents(&out), 0);
	/* Each one missing. */
	for (size_t skip = 0; skip < n; skip++) {
		out.len = out.nsections = 0;
		for (size_t i = 0; i < n; i++)
			if (i != skip)
				snap_put(&out, whole[i].type, whole[i].index, whole[i].p,
					 whole[i].len);
		assert_int_equal(contents(&out), -EBADMSG);
	}
	/* One more, each wrong in its own way. */
	memset(junk, 0xff, sizeof(junk));
	const struct {
		uint32_t type, index;
		const void *p;
		uint32_t len;
	} extra[] = {
		{ 99, 0, &uart, sizeof(uart) },		     /* unknown type */
		{ SNAP_SEC_VCPU, 2, &vcpu, sizeof(vcpu) },   /* a third vCPU of two */
		{ SNAP_SEC_VCPU, 1, &vcpu, 100 },	     /* (replaces 1 below) short */
		{ SNAP_SEC_VIRTIO, 0, &uart, sizeof(uart) }, /* wrong size */
	};
	for (size_t e = 0; e < sizeof(extra) / sizeof(extra[0]); e++) {
		out.len = out.nsections = 0;
		for (size_t i = 0; i < n; i++)
			if (!(extra[e].type == whole[i].type && extra[e].index == whole[i].index))
				snap_put(&out, whole[i].type, whole[i].index, whole[i].p,
					 whole[i].len);
		snap_put(&out, extra[e].type, extra[e].index, extra[e].p, extra[e].len);
		assert_int_equal(contents(&out), -EBADMSG);
	}
	/* A UART state no 8250 has, and a VM without the irqchip a machine has. */
	out.len = out.nsections = 0;
	for (size_t i = 0; i < n; i++)
		snap_put(&out, whole[i].type, whole[i].index,
			 whole[i].type == SNAP_SEC_UART ? (const void *)junk : whole[i].p,
			 whole[i].len);
	assert_int_equal(contents(&out), -EBADMSG);
	vm.irqchip = 0;
	out.len = out.nsections = 0;
	for (size_t i = 0; i < n; i++)
		snap_put(&out, whole[i].type, whole[i].index, whole[i].p, whole[i].len);
	assert_int_equal(contents(&out), -EBADMSG);
	vm.irqchip = 1;
	snap_out_free(&out);
}

/* A TSC deadline that fired while the vCPU stopped (it reads 0) is made due at once, and any
 * deadline is set after the TSC it is armed against; nothing else moves. */
static void test_msrs_for_restore(void **state)
{
	(void)state;
	struct kvm_msr_entry e[] = {
		{ .index = 0x174, .data = 7 }, { .index = 0x6e0, .data = 0 },
		{ .index = 0x10, .data = 123456789 }, { .index = 0xc0000080, .data = 0xd01 },
	};
	x86_msrs_for_restore(e, 4);
	assert_int_equal(e[0].index, 0x174);
	assert_int_equal(e[1].index, 0x10);
	assert_int_equal(e[2].index, 0xc0000080);
	assert_int_equal(e[3].index, 0x6e0);
	assert_int_equal(e[3].data, 123456789);
	/* An armed deadline keeps its value; done twice, nothing changes. */
	struct kvm_msr_entry f[] = { { .index = 0x6e0, .data = 99 }, { .index = 0x10, .data = 5 } };
	x86_msrs_for_restore(f, 2);
	x86_msrs_for_restore(f, 2);
	assert_int_equal(f[0].index, 0x10);
	assert_int_equal(f[1].index, 0x6e0);
	assert_int_equal(f[1].data, 99);
	/* No TSC saved: a zero deadline stays zero (nothing to make it due against). */
	struct kvm_msr_entry g[] = { { .index = 0x6e0, .data = 0 } };
	x86_msrs_for_restore(g, 1);
	assert_int_equal(g[0].data, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_header_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_anywhere, setup, teardown),
		cmocka_unit_test(test_two_halves),
		cmocka_unit_test_setup_teardown(test_lies_with_valid_crcs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_others_may_not_read, setup, teardown),
		cmocka_unit_test(test_out_buffer),
		cmocka_unit_test(test_cpuid_missing),
		cmocka_unit_test(test_device_states),
		cmocka_unit_test(test_contents),
		cmocka_unit_test(test_msrs_for_restore),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
