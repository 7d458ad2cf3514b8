/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_rules.c: the broker's rule file (strict loading), request matching, credential
 * rendering, and the address policy that keeps upstreams off private networks. */
#include "broker/dest.h"
#include "broker/rules.h"

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *good = "{\"secrets\":[{\"name\":\"GH\",\"inject\":{\"header\":"
			  "\"Authorization\",\"value\":\"Bearer {}\"},\"destinations\":["
			  "{\"scheme\":\"https\",\"host\":\"API.example.com\",\"method\":\"GET\","
			  "\"path_prefix\":\"/repos/\"},"
			  "{\"scheme\":\"https\",\"host\":\"up.test\",\"port\":8443,"
			  "\"allow_addresses\":[\"127.0.0.1\",\"::1\"]}]},"
			  "{\"name\":\"B\",\"inject\":{\"basic\":\"x-access-token\"},"
			  "\"destinations\":[{\"scheme\":\"https\",\"host\":\"git.test\"}]},"
			  "{\"name\":\"Q\",\"inject\":{\"query\":\"api_key\"},"
			  "\"destinations\":[{\"scheme\":\"http\",\"host\":\"q.test\"}]}],"
			  "\"allow\":[{\"scheme\":\"https\",\"host\":\"pypi.org\"}]}";

static void load_good(struct rules *r)
{
	char err[256] = "";

	assert_int_equal(rules_load_json(r, good, err, sizeof(err)), 0);
}

static void test_load(void **state)
{
	struct rules r;

	(void)state;
	load_good(&r);
	assert_int_equal(r.n_secrets, 3);
	assert_string_equal(r.secrets[0].dests[0].host, "api.example.com");
	assert_int_equal(r.secrets[0].dests[0].port, 443);
	assert_int_equal(r.secrets[0].dests[1].n_addrs, 2);
	assert_int_equal(r.secrets[2].dests[0].port, 80);
	assert_int_equal(r.n_allow, 1);
	rules_free(&r);
}

static void test_load_rejects(void **state)
{
	static const char *bad[] = {
		"[]",
		"{\"secret\":[]}", /* typo'd key: never silently ignored */
		"{\"secrets\":[{\"name\":\"a-b\",\"inject\":{\"query\":\"k\"},\"destinations\":"
		"[{\"scheme\":\"https\",\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"header\":\"X\",\"value\":\"no "
		"slot\"},\"destinations\":[{\"scheme\":\"https\",\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"header\":\"X\",\"value\":\"{}{}\"},"
		"\"destinations\":[{\"scheme\":\"https\",\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"header\":\"X Y\",\"value\":\"{}\"},"
		"\"destinations\":[{\"scheme\":\"https\",\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"query\":\"k\"},\"destinations\":[]}]}",
		"{\"allow\":[{\"scheme\":\"ftp\",\"host\":\"h\"}]}",
		"{\"allow\":[{\"scheme\":\"https\",\"host\":\"h\",\"port\":0}]}",
		"{\"allow\":[{\"scheme\":\"https\",\"host\":\"h\",\"port\":70000}]}",
		"{\"allow\":[{\"scheme\":\"https\",\"host\":\"h/x\"}]}",
		"{\"allow\":[{\"scheme\":\"https\",\"host\":\"h\",\"path_prefix\":\"x\"}]}",
		"{\"allow\":[{\"scheme\":\"https\",\"host\":\"h\",\"allow_addresses\":[\"nope\"]}]"
		"}",
		"{\"allow\":[{\"scheme\":\"https\",\"host\":\"h\",\"extra\":1}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"query\":\"k\"},\"destinations\":"
		"[{\"scheme\":\"https\",\"host\":\"h\"}]},{\"name\":\"A\",\"inject\":{\"query\":"
		"\"k\"},\"destinations\":[{\"scheme\":\"https\",\"host\":\"h\"}]}]}",
	};
	struct rules r;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (rules_load_json(&r, bad[i], err, sizeof(err)) != -1)
			fail_msg("accepted bad rules #%zu: %s", i, bad[i]);
		assert_true(strlen(err) > 0);
	}
}

static void test_match(void **state)
{
	struct rules r;
	struct rules_req q = { "GET", "api.example.com", -1, "/repos/x" };

	(void)state;
	load_good(&r);
	assert_non_null(rules_secret_match(&r.secrets[0], &q));
	q.host = "API.Example.COM";
	assert_non_null(rules_secret_match(&r.secrets[0], &q));
	q.port = 443;
	assert_non_null(rules_secret_match(&r.secrets[0], &q));
	q.port = 8443;
	assert_null(rules_secret_match(&r.secrets[0], &q));
	q.port = -1;
	q.method = "POST";
	assert_null(rules_secret_match(&r.secrets[0], &q));
	q.method = "GET";
	q.path = "/repo";
	assert_null(rules_secret_match(&r.secrets[0], &q));
	q.path = "/repos/";
	q.host = "api.example.com.evil";
	assert_null(rules_secret_match(&r.secrets[0], &q));
	q.host = "up.test";
	q.port = 8443;
	q.method = "DELETE";
	assert_non_null(rules_secret_match(&r.secrets[0], &q));
	q.port = -1; /* no port in the URL means 443 for an https destination */
	assert_null(rules_secret_match(&r.secrets[0], &q));
	q.host = "pypi.org";
	assert_null(rules_secret_match(&r.secrets[0], &q));
	assert_non_null(rules_allow_match(&r, &q));
	q.host = "files.pypi.org";
	assert_null(rules_allow_match(&r, &q));
	assert_non_null(rules_find_secret(&r, "GH", 2));
	assert_null(rules_find_secret(&r, "G", 1));
	assert_null(rules_find_secret(&r, "GHX", 3));
	rules_free(&r);
}

static void test_render(void **state)
{
	struct rules r;
	char *s;

	(void)state;
	load_good(&r);
	s = rules_render(&r.secrets[0], (const uint8_t *)"tok", 3);
	assert_string_equal(s, "Bearer tok");
	free(s);
	/* base64("x-access-token:p@ss") */
	s = rules_render(&r.secrets[1], (const uint8_t *)"p@ss", 4);
	assert_string_equal(s, "Basic eC1hY2Nlc3MtdG9rZW46cEBzcw==");
	free(s);
	s = rules_render(&r.secrets[2], (const uint8_t *)"a b&c=d/é", 10);
	assert_string_equal(s, "a%20b%26c%3Dd%2F%C3%A9");
	free(s);
	/* A value that would split a header is never rendered into one. */
	assert_null(rules_render(&r.secrets[0], (const uint8_t *)"a\r\nX: y", 7));
	assert_null(rules_render(&r.secrets[1], (const uint8_t *)"a\nb", 3));
	assert_null(rules_render(&r.secrets[0], (const uint8_t *)"a\0b", 3));
	rules_free(&r);
}

static int special(const char *ip)
{
	struct sockaddr_storage ss = { 0 };

	if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, ip, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	else
		fail_msg("bad test address %s", ip);
	return dest_addr_is_special((struct sockaddr *)&ss);
}

static void test_addresses(void **state)
{
	static const char *refused[] = { "127.0.0.1",
					 "127.8.9.10",
					 "10.1.2.3",
					 "172.16.0.1",
					 "172.31.255.255",
					 "192.168.1.1",
					 "169.254.169.254",
					 "100.64.0.1",
					 "0.0.0.0",
					 "224.0.0.1",
					 "255.255.255.255",
					 "198.18.0.1",
					 "::1",
					 "::",
					 "fe80::1",
					 "fd00::1",
					 "fc00::1",
					 "::ffff:127.0.0.1",
					 "::ffff:169.254.169.254",
					 "64:ff9b::a00:1",
					 "ff02::1" };
	static const char *public[] = { "1.1.1.1",     "8.8.8.8",     "172.32.0.1",
					"192.169.0.1", "100.128.0.1", "2606:4700::1111",
					"198.20.0.1" };
	struct rules r;
	struct sockaddr_in a = { .sin_family = AF_INET };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (!special(refused[i]))
			fail_msg("%s counted as public", refused[i]);
	for (i = 0; i < sizeof(public) / sizeof(public[0]); i++)
		if (special(public[i]))
			fail_msg("%s counted as special", public[i]);
	/* Listed addresses are allowed for that destination only. */
	load_good(&r);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_true(dest_addr_allowed(&r.secrets[0].dests[1], (struct sockaddr *)&a));
	assert_false(dest_addr_allowed(&r.secrets[0].dests[0], (struct sockaddr *)&a));
	inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
	assert_false(dest_addr_allowed(&r.secrets[0].dests[1], (struct sockaddr *)&a));
	rules_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),	  cmocka_unit_test(test_load_rejects),
		cmocka_unit_test(test_match),	  cmocka_unit_test(test_render),
		cmocka_unit_test(test_addresses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
