/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for loop_admit (broker/loop.c): who may open one more connection to a shared
 * broker, and when a session under its fair share may take an idle one of another's. */
#include "broker/loop.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static void test_room(void **st)
{
	unsigned fair;
	(void)st;
	/* Below the bound, any session within its own limit is let in, over its share or not. */
	assert_int_equal(loop_admit(0, 0, 100, 50, 1, &fair), LOOP_ADMIT);
	assert_int_equal(fair, 100);
	assert_int_equal(loop_admit(49, 99, 100, 50, 2, &fair), LOOP_ADMIT);
	assert_int_equal(fair, 50);
	/* Its own limit holds whatever room the broker has. */
	assert_int_equal(loop_admit(50, 50, 100, 50, 1, &fair), LOOP_REFUSE_SESSION);
}

static void test_full(void **st)
{
	unsigned fair;
	(void)st;
	/* Full: a session alone at the bound is refused... */
	assert_int_equal(loop_admit(100, 100, 100, 1024, 1, &fair), LOOP_REFUSE_FULL);
	assert_int_equal(fair, 100);
	/* ... a newcomer (two sessions now) is under its share of 50 and may take one... */
	assert_int_equal(loop_admit(0, 100, 100, 1024, 2, &fair), LOOP_ADMIT_EVICT);
	assert_int_equal(fair, 50);
	/* ... up to its share, and no further. */
	assert_int_equal(loop_admit(49, 100, 100, 1024, 2, &fair), LOOP_ADMIT_EVICT);
	assert_int_equal(loop_admit(50, 100, 100, 1024, 2, &fair), LOOP_REFUSE_FULL);
	/* More sessions than connections: every share is at least one. */
	assert_int_equal(loop_admit(0, 10, 10, 1024, 40, &fair), LOOP_ADMIT_EVICT);
	assert_int_equal(fair, 1);
	assert_int_equal(loop_admit(1, 10, 10, 1024, 40, &fair), LOOP_REFUSE_FULL);
	/* No session counted (cannot happen, but must not divide by zero). */
	assert_int_equal(loop_admit(0, 0, 10, 10, 0, &fair), LOOP_ADMIT);
	assert_int_equal(fair, 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_room),
		cmocka_unit_test(test_full),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
