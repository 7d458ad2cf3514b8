/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_reqpath.c: the request target's canonical spelling (broker/reqpath.c) —
 * every spelling a server routes like a rule's path comes out as that path, what servers read
 * differently is refused, and the query is decoded the same way. */
#include "broker/reqpath.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static const char *canon(const char *in)
{
	static char out[256];
	const char *why = NULL;

	return reqpath_canon_path(in, strlen(in), out, &why) ? NULL : out;
}

static void test_unreserved_decoded(void **state)
{
	(void)state;
	assert_string_equal(canon("/%77/items"), "/w/items");
	assert_string_equal(canon("/repo.git/git-receive%2Dpack"), "/repo.git/git-receive-pack");
	assert_string_equal(canon("/%41%7a%30%2D%2e%5F%7E"), "/Az0-._~");
	/* Escapes of anything else stay escaped, with upper-case hex. */
	assert_string_equal(canon("/a%20b%3fc%2b"), "/a%20b%3Fc%2B");
	assert_string_equal(canon("/"), "/");
	assert_string_equal(canon("/a/"), "/a/");
	assert_string_equal(canon("/a.b/c..d/.e"), "/a.b/c..d/.e");
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"//w/items", "/w//items", "/w;x/items", "/w/items;", "/%2e%2e/admin", "/a/%2E",
		"/a/.",	     "/./a",	  "/a/../b",	"/a%2fb",    "/a%2Fb",	      "/a%5cb",
		"/a%00",     "/a\\b",	  "a/b",	"",	     "/a%4",	      "/a%zz",
	};
	const char *why;
	char out[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (!reqpath_canon_path(bad[i], strlen(bad[i]), out, &why))
			fail_msg("accepted \"%s\" as \"%s\"", bad[i], out);
		assert_non_null(why);
	}
}

static void test_query(void **state)
{
	char out[128];
	const char *why;
	const char *q = "service=git-receive%2dpack&a=%2f%7e;x//y";

	(void)state;
	assert_int_equal(reqpath_canon_query(q, strlen(q), out, &why), 0);
	assert_string_equal(out, "service=git-receive-pack&a=%2F~;x//y");
	assert_int_equal(reqpath_canon_query("", 0, out, &why), 0);
	assert_string_equal(out, "");
	assert_int_equal(reqpath_canon_query("a=%", 3, out, &why), -1);
}

/* Canonical twice is canonical once. */
static void test_idempotent(void **state)
{
	static const char *const in[] = { "/%77/%2d%20x", "/a%3Bb/%7E", "/x%2b%2B" };
	char once[64], twice[64];
	const char *why;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		assert_int_equal(reqpath_canon_path(in[i], strlen(in[i]), once, &why), 0);
		assert_int_equal(reqpath_canon_path(once, strlen(once), twice, &why), 0);
		assert_string_equal(once, twice);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unreserved_decoded),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_idempotent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
