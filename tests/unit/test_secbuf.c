/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_secbuf.c: the broker's growing buffers for bytes that may hold a secret
 * (broker/secbuf.c): what goes in comes out whole, across every growth. */
#include "broker/secbuf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_add_grows_and_keeps(void **state)
{
	(void)state;
	struct secbuf s = { 0 };
	char want[5000];
	size_t n = 0;

	for (size_t i = 0; n + i + 1 < sizeof(want); i++) {
		char piece[64];

		for (size_t k = 0; k < i % sizeof(piece); k++)
			piece[k] = (char)('a' + (n + k) % 26);
		secbuf_add(&s, piece, i % sizeof(piece));
		memcpy(want + n, piece, i % sizeof(piece));
		n += i % sizeof(piece);
	}
	secbuf_str(&s, "end");
	memcpy(want + n, "end", 4);
	n += 3;
	assert_false(s.oom);
	assert_int_equal(s.n, n);
	assert_true(s.cap > s.n);
	assert_memory_equal(s.b, want, n + 1); /* terminated */
	secbuf_wipe(&s);
	assert_null(s.b);
	assert_int_equal(s.n + s.cap + (size_t)s.oom, 0);
	secbuf_wipe(&s); /* an empty one too */
}

static void test_regrow(void **state)
{
	(void)state;
	char *a = secbuf_regrow(NULL, 0, 0, 8);

	assert_non_null(a);
	memcpy(a, "01234567", 8);
	char *b = secbuf_regrow(a, 8, 5, 100);
	assert_non_null(b);
	assert_memory_equal(b, "01234", 5);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_grows_and_keeps),
		cmocka_unit_test(test_regrow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
