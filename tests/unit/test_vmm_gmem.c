/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_gmem.c: the one guest-memory check (gmem_ptr) at every edge, window
 * bookkeeping, and the memfd's seals — the boundary a hostile guest pushes on first. */
#include "vmm/gmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define MIB  (1ULL << 20)
#define SIZE (2 * MIB)

static int setup(void **state)
{
	static struct gmem gm;
	if (gmem_init(&gm, SIZE) || gmem_add_region(&gm, 0, 0, SIZE))
		return -1;
	*state = &gm;
	return 0;
}

static int teardown(void **state)
{
	gmem_destroy(*state);
	return 0;
}

static void test_in_range(void **state)
{
	struct gmem *gm = *state;
	assert_ptr_equal(gmem_ptr(gm, 0, 1), gm->host);
	assert_ptr_equal(gmem_ptr(gm, 0x1234, 16), gm->host + 0x1234);
	assert_ptr_equal(gmem_ptr(gm, 0, SIZE), gm->host);
}

static void test_last_byte_and_one_past(void **state)
{
	struct gmem *gm = *state;
	assert_ptr_equal(gmem_ptr(gm, SIZE - 1, 1), gm->host + SIZE - 1);
	assert_ptr_equal(gmem_ptr(gm, SIZE - 8, 8), gm->host + SIZE - 8);
	assert_null(gmem_ptr(gm, SIZE, 1));	/* one past the end */
	assert_null(gmem_ptr(gm, SIZE - 4, 8)); /* straddles the end */
	assert_null(gmem_ptr(gm, 0, SIZE + 1)); /* one byte too long */
}

static void test_overflow_wrap(void **state)
{
	struct gmem *gm = *state;
	/* gpa + len wraps to a small, in-range number: a naive end check would accept these. */
	assert_null(gmem_ptr(gm, UINT64_MAX, 1));
	assert_null(gmem_ptr(gm, UINT64_MAX, 2));
	assert_null(gmem_ptr(gm, UINT64_MAX - 7, 16));
	assert_null(gmem_ptr(gm, 1, UINT64_MAX));
	assert_null(gmem_ptr(gm, 0x1000, UINT64_MAX - 0xfff));
	assert_null(gmem_ptr(gm, 0, UINT64_MAX));
}

static void test_zero_length(void **state)
{
	struct gmem *gm = *state;
	assert_null(gmem_ptr(gm, 0, 0));
	assert_null(gmem_ptr(gm, 0x1000, 0));
	assert_null(gmem_ptr(gm, SIZE, 0));
}

static void test_read_write(void **state)
{
	struct gmem *gm = *state;
	const char msg[] = "guest bytes";
	char back[sizeof(msg)];
	assert_int_equal(gmem_write(gm, 0x4000, msg, sizeof(msg)), 0);
	assert_int_equal(gmem_read(gm, 0x4000, back, sizeof(back)), 0);
	assert_memory_equal(back, msg, sizeof(msg));
	assert_int_equal(gmem_write(gm, SIZE - 2, msg, sizeof(msg)), -EFAULT);
	assert_int_equal(gmem_read(gm, UINT64_MAX - 1, back, sizeof(back)), -EFAULT);
}

/* A window at a high gpa backed by the second MiB of the memfd. */
static void test_offset_window(void **state)
{
	(void)state;
	struct gmem gm;
	const uint64_t hi = 1ULL << 32;
	assert_int_equal(gmem_init(&gm, SIZE), 0);
	assert_int_equal(gmem_add_region(&gm, 0, 0, MIB), 0);
	assert_int_equal(gmem_add_region(&gm, hi, MIB, MIB), 0);
	assert_ptr_equal(gmem_ptr(&gm, hi, 1), gm.host + MIB);
	assert_ptr_equal(gmem_ptr(&gm, hi + MIB - 1, 1), gm.host + SIZE - 1);
	assert_null(gmem_ptr(&gm, hi - 1, 2));	 /* straddles the window's start */
	assert_null(gmem_ptr(&gm, hi + MIB, 1)); /* one past its end */
	assert_null(gmem_ptr(&gm, MIB, 1));	 /* the hole between windows */
	assert_null(gmem_ptr(&gm, MIB - 1, 2));	 /* runs off the low window into the hole */
	gmem_destroy(&gm);
}

static void test_add_region_refusals(void **state)
{
	(void)state;
	struct gmem gm;
	assert_int_equal(gmem_init(&gm, SIZE), 0);
	assert_int_equal(gmem_add_region(&gm, 0, 0, 0), -EINVAL);	      /* empty */
	assert_int_equal(gmem_add_region(&gm, 0x10, 0, 0x1000), -EINVAL);     /* unaligned */
	assert_int_equal(gmem_add_region(&gm, 0, 0, SIZE + 0x1000), -EINVAL); /* beyond memfd */
	assert_int_equal(gmem_add_region(&gm, 0, SIZE, 0x1000), -EINVAL);     /* offset at end */
	assert_int_equal(gmem_add_region(&gm, UINT64_MAX & ~0xfffULL, 0, 0x2000),
			 -EINVAL); /* wraps */
	assert_int_equal(gmem_add_region(&gm, 0x10000, 0, 0x10000), 0);
	assert_int_equal(gmem_add_region(&gm, 0x1f000, 0, 0x2000), -EINVAL); /* overlaps end */
	assert_int_equal(gmem_add_region(&gm, 0xf000, 0, 0x2000), -EINVAL);  /* overlaps start */
	assert_int_equal(gmem_add_region(&gm, 0x20000, 0, 0x1000), 0);	     /* adjacent is fine */
	assert_int_equal(gmem_add_region(&gm, 0x30000, 0, 0x1000), 0);
	assert_int_equal(gmem_add_region(&gm, 0x40000, 0, 0x1000), 0);
	assert_int_equal(gmem_add_region(&gm, 0x50000, 0, 0x1000), -ENOSPC);
	gmem_destroy(&gm);
	assert_int_equal(gmem_init(&gm, 0), -EINVAL);
	assert_int_equal(gmem_init(&gm, 4097), -EINVAL);
	gmem_destroy(&gm); /* safe after a failed init */
}

static void test_memfd_sealed_and_cloexec(void **state)
{
	struct gmem *gm = *state;
	int seals = fcntl(gm->fd, F_GET_SEALS);
	assert_true(seals >= 0);
	assert_true(seals & F_SEAL_SHRINK);
	assert_true(seals & F_SEAL_SEAL);
	assert_int_equal(ftruncate(gm->fd, SIZE / 2), -1);
	assert_int_equal(errno, EPERM);
	assert_true(fcntl(gm->fd, F_GETFD) & FD_CLOEXEC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_range),
		cmocka_unit_test(test_last_byte_and_one_past),
		cmocka_unit_test(test_overflow_wrap),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_read_write),
		cmocka_unit_test(test_offset_window),
		cmocka_unit_test(test_add_region_refusals),
		cmocka_unit_test(test_memfd_sealed_and_cloexec),
	};
	return cmocka_run_group_tests_name("vmm_gmem", tests, setup, teardown);
}
