/* tests/unit/test_boot_args.c: the command's hex encoding on the kernel command line. */
#include "lib/boot_args.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_round_trip(void **state)
{
	(void)state;
	char *in[] = { "sh", "-c", "echo \"a b\" 'c' $X", "", "ünï\x01\xff", NULL };
	char buf[512] = "prefix=";
	assert_int_equal(boot_args_encode(buf, sizeof(buf), in, 5), 0);
	assert_memory_equal(buf, "prefix=7368002d", 15); /* "sh", NUL, then "-c"... */
	char **out;
	const char *hex = buf + strlen("prefix=");
	assert_int_equal(boot_args_decode(hex, strlen(hex), &out), 5);
	for (int i = 0; i < 5; i++)
		assert_string_equal(out[i], in[i]);
	assert_null(out[5]);
	boot_args_free(out);
}

static void test_encode_bounds(void **state)
{
	(void)state;
	char *in[] = { "abcd", NULL };
	char buf[11] = ""; /* 4 chars + NUL = 10 hex digits + NUL: fits exactly */
	assert_int_equal(boot_args_encode(buf, sizeof(buf), in, 1), 0);
	assert_string_equal(buf, "6162636400");
	char small[10] = "";
	assert_int_equal(boot_args_encode(small, sizeof(small), in, 1), -1);
}

static void test_decode_rejects(void **state)
{
	(void)state;
	char **out;
	static const char *const bad[] = {
		"",	  /* nothing */
		"610",	  /* odd length */
		"6162",	  /* no final NUL */
		"61zz00", /* not hex */
		"6A00",	  /* upper case is not what we write */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(boot_args_decode(bad[i], strlen(bad[i]), &out), -1);
		assert_null(out);
	}
	/* More strings than BOOT_ARGS_MAX_STRINGS. */
	char many[2 * (BOOT_ARGS_MAX_STRINGS + 1) * 2 + 1];
	for (int i = 0; i < BOOT_ARGS_MAX_STRINGS + 1; i++)
		memcpy(many + 4 * i, "6100", 4);
	size_t len = 4 * (BOOT_ARGS_MAX_STRINGS + 1);
	assert_int_equal(boot_args_decode(many, len, &out), -1);
	assert_int_equal(boot_args_decode(many, len - 4, &out), BOOT_ARGS_MAX_STRINGS);
	boot_args_free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_encode_bounds),
		cmocka_unit_test(test_decode_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
