/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/env_merge.c: layers of environments, a later entry of a name replacing
 * every earlier one, and run-directory text split into lines. */
#include "lib/env_merge.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_layers(void **st)
{
	(void)st;
	char *image[] = { "PATH=/usr/bin", "HOME=/root", "LANG=C", NULL };
	char *session[] = { "HOME=/work", "A=1", NULL };
	char *exec[] = { "A=2", "LANGUAGE=en", NULL };
	char *const *const layers[] = { image, session, exec, NULL };
	char *out[8];
	assert_int_equal(env_merge(layers, out, 7), 5);
	const char *want[] = { "PATH=/usr/bin", "LANG=C", "HOME=/work", "A=2", "LANGUAGE=en" };
	for (int i = 0; i < 5; i++)
		assert_string_equal(out[i], want[i]);
	assert_null(out[5]);
}

static void test_duplicates_and_bound(void **st)
{
	(void)st;
	char *one[] = { "X=1", "X=2", "Y=1", NULL }, *empty[] = { NULL };
	char *const *const layers[] = { one, empty, NULL };
	char *out[3];
	/* "X=1" is set again later in its own layer; a name is its text up to '=' ("XY" is not X). */
	assert_int_equal(env_merge(layers, out, 2), 2);
	assert_string_equal(out[0], "X=2");
	assert_string_equal(out[1], "Y=1");
	assert_null(out[2]);
	char *pre[] = { "XY=1", NULL }, *post[] = { "X=3", NULL };
	char *const *const l2[] = { pre, post, NULL };
	assert_int_equal(env_merge(l2, out, 2), 2);
	assert_string_equal(out[0], "XY=1");
	/* at most max entries, and the NULL */
	char *const *const l3[] = { one, NULL };
	assert_int_equal(env_merge(l3, out, 1), 1);
	assert_null(out[1]);
}

static void test_lines(void **st)
{
	(void)st;
	char text[] = "A=1\nB=2\n\nC=3\n";
	char *out[4];
	assert_int_equal(env_lines(text, out, 3), 3);
	assert_string_equal(out[2], "C=3");
	assert_null(out[3]);
	char more[] = "A=1\nB=2\nC=3\n";
	assert_int_equal(env_lines(more, out, 2), 2);
	assert_null(out[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layers),
		cmocka_unit_test(test_duplicates_and_bound),
		cmocka_unit_test(test_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
