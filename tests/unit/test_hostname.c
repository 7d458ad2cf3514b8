/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_hostname.c: the canonical spelling of hosts (broker/hostname.c) — what one
 * host may be written as maps to one string, and what could name a host two ways (other
 * spellings of an IPv4 address, IPv6 forms carrying one, empty labels, non-ASCII) is refused. */
#include "broker/hostname.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void same(const char *in, const char *want)
{
	char out[HOSTNAME_MAX + 1];
	const char *why = NULL;

	if (hostname_canon(in, strlen(in), out, &why))
		fail_msg("%s refused: %s", in, why);
	if (strcmp(out, want))
		fail_msg("%s -> %s, want %s", in, out, want);
}

static void refused(const char *in, const char *because)
{
	char out[HOSTNAME_MAX + 1];
	const char *why = NULL;

	if (!hostname_canon(in, strlen(in), out, &why))
		fail_msg("%s accepted as %s", in, out);
	if (!why || !strstr(why, because))
		fail_msg("%s refused for \"%s\", not \"%s\"", in, why ? why : "-", because);
}

static void test_names(void **state)
{
	char long_label[80], long_name[300];

	(void)state;
	same("Example.COM", "example.com");
	same("denied.example.", "denied.example");
	same("DB.Corp.Example.", "db.corp.example");
	same("a_b-c.test", "a_b-c.test");
	same("xn--bcher-kva.example", "xn--bcher-kva.example");
	same("localhost", "localhost");
	same("1.2.3.4.example", "1.2.3.4.example"); /* a name: its last label is not a number */
	refused("", "empty");
	refused(".", "empty");
	refused("a..b", "empty label");
	refused(".a.b", "empty label");
	refused("a.b..", "empty label");
	refused("b\xc3\xbc"
		"cher.example",
		"non-ASCII");
	refused("a b.test", "only letters");
	refused("a/b.test", "only letters");
	refused("a%2eb", "only letters");
	memset(long_label, 'a', 64);
	strcpy(long_label + 64, ".test");
	refused(long_label, "63");
	memset(long_name, 'a', 260);
	for (int i = 50; i < 260; i += 50)
		long_name[i] = '.';
	long_name[260] = '\0';
	refused(long_name, "253");
}

static void test_addresses(void **state)
{
	(void)state;
	same("127.0.0.1", "127.0.0.1");
	same("10.0.0.1.", "10.0.0.1");
	same("::1", "::1");
	same("[::1]", "::1");
	same("[2001:DB8:0:0::1]", "2001:db8::1");
	same("2001:0db8::0001", "2001:db8::1");
	/* Other spellings of 127.0.0.1 and 10.0.0.1 that inet_aton and URL parsers accept. */
	refused("2130706433", "a.b.c.d");
	refused("0177.0.0.1", "a.b.c.d");
	refused("0x7f.0.0.1", "a.b.c.d");
	refused("0x7f000001", "a.b.c.d");
	refused("127.1", "a.b.c.d");
	refused("127.0.1", "a.b.c.d");
	refused("010.0.0.1", "a.b.c.d");
	refused("256.0.0.1", "a.b.c.d");
	refused("1.2.3.4.5", "a.b.c.d");
	refused("example.123", "a.b.c.d");
	refused("example.0x1f", "a.b.c.d");
	/* IPv6 forms that carry an IPv4 address, and zone ids. */
	refused("::ffff:10.0.0.1", "carries an IPv4");
	refused("[::ffff:a00:1]", "carries an IPv4");
	refused("::10.0.0.1", "carries an IPv4");
	refused("64:ff9b::a00:1", "carries an IPv4");
	refused("fe80::1%eth0", "zone");
	refused("[::1", "bracketed");
	refused("[example.com]", "IPv6");
	refused("1:2:3", "IPv6");
}

static void test_patterns(void **state)
{
	char out[HOSTNAME_MAX + 3];
	const char *why;

	(void)state;
	assert_int_equal(hostname_canon_pattern("*.Corp.Example.", out, &why), 0);
	assert_string_equal(out, "*.corp.example");
	assert_int_equal(hostname_canon_pattern("Denied.Example.", out, &why), 0);
	assert_string_equal(out, "denied.example");
	assert_int_equal(hostname_canon_pattern("*.", out, &why), -1);
	assert_int_equal(hostname_canon_pattern("*..x", out, &why), -1);
	assert_int_equal(hostname_canon_pattern("*.10.0.0.1", out, &why), -1);
	assert_int_equal(hostname_canon_pattern("a.*.b", out, &why), -1);
	assert_true(hostname_is_ip("10.0.0.1") && hostname_is_ip("::1"));
	assert_false(hostname_is_ip("a.test"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_patterns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
