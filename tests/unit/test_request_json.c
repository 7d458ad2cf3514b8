/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for session/request_json.c: the API's JSON body as a session request, checked by
 * the table of request fields: each shape the API uses (numbers, "work" with "work_ro", rules
 * as an object, arrays, "env"), the table's bounds and choices, unknown keys, wrong types, and
 * a request as large as the API allows (64 rules) whole. */
#include "session/plan.h"
#include "session/request_json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char err[320];

/* Parses TEXT into *R; the documents live until the test's end (R points into them). */
static int parse(const char *text, struct session_request *r, json_t *keep)
{
	json_error_t je;
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	assert_non_null(o);
	json_array_append_new(keep, o);
	memset(r, 0, sizeof(*r));
	err[0] = '\0';
	return request_from_json(o, r, keep, err, sizeof(err));
}

static void test_every_shape(void **st)
{
	(void)st;
	json_t *keep = json_array();
	struct session_request r;
	assert_int_equal(parse("{\"image\": \"py\", \"mem_mib\": 512, \"cpus\": 2, \"timeout_s\": 2.5,"
			       " \"work\": \"/srv/w\", \"work_ro\": true, \"scope\": \"/s.json\","
			       " \"mem_limit_mib\": 1024, \"work_rules\": {\"src\": \"rw\","
			       " \"conf\": \"ro\"}, \"share_secrets\": \"hide\","
			       " \"share_secrets_allow\": [\"a/.env\"], \"env\": {\"A\": \"1\"}}",
			       &r, keep),
			 0);
	assert_string_equal(r.image, "py");
	assert_int_equal(r.mem_mib, 512);
	assert_int_equal(r.cpus, 2);
	assert_true(r.timeout_s == 2.5);
	assert_string_equal(r.work, "/srv/w:ro");
	assert_string_equal(r.broker.scope, "/s.json");
	assert_int_equal(r.mem_limit_mib, 1024);
	assert_int_equal(r.nwork_rules, 2);
	assert_string_equal(r.work_rules[0], "src:rw");
	assert_string_equal(r.work_rules[1], "conf:ro");
	assert_string_equal(r.share_secrets, "hide");
	assert_int_equal(r.nshare_allow, 1);
	assert_string_equal(r.share_allow[0], "a/.env");
	assert_int_equal(r.nenv, 1);
	assert_string_equal(r.env[0], "A=1");
	assert_int_equal(parse("{\"work\": \"/srv/w\"}", &r, keep), 0);
	assert_string_equal(r.work, "/srv/w:rw");
	json_decref(keep);
}

/* Each refusal names the key. */
static void test_refused(void **st)
{
	(void)st;
	static const struct {
		const char *body, *names;
	} bad[] = {
		{ "{\"mem_mib\": 70000}", "\"mem_mib\"" },  /* over the table's bound */
		{ "{\"mem_mib\": 512.5}", "\"mem_mib\"" },  /* not whole */
		{ "{\"mem_mib\": \"512\"}", "\"mem_mib\"" }, /* a string for a number */
		{ "{\"cpus\": 0}", "\"cpus\"" },
		{ "{\"timeout_s\": 0}", "\"timeout_s\"" },
		{ "{\"share_secrets\": \"keep\"}", "\"share_secrets\"" },
		{ "{\"image\": 5}", "\"image\"" },
		{ "{\"image\": \"\"}", "\"image\"" },
		{ "{\"work\": \"rel/dir\"}", "\"work\"" },
		{ "{\"work_ro\": true}", "\"work_ro\"" }, /* without work */
		{ "{\"work\": \"/w\", \"work_ro\": 1}", "\"work_ro\"" },
		{ "{\"work_rules\": [\"a:ro\"]}", "\"work_rules\"" },
		{ "{\"work_rules\": {\"a\": 1}}", "\"work_rules\"" },
		{ "{\"share_secrets_allow\": \"a\"}", "\"share_secrets_allow\"" },
		{ "{\"env\": {\"A\": 1}}", "\"env\"" },
		{ "{\"env\": {\"A=B\": \"1\"}}", "\"env\"" },
		{ "{\"pool\": true}", "\"pool\"" }, /* the daemon's own */
		{ "{\"tty\": true}", "\"tty\"" },   /* not a key of the table */
		{ "[1]", "object" },
	};
	json_t *keep = json_array();
	struct session_request r;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].body, &r, keep), -1);
		if (!strstr(err, bad[i].names))
			fail_msg("%s: \"%s\" does not name %s", bad[i].body, err, bad[i].names);
	}
	json_decref(keep);
}

/* The API's largest request, 64 rules and 64 allowed paths, arrives whole; a 65th is refused
 * by the table's bound. */
static void test_largest(void **st)
{
	(void)st;
	char body[16384];
	size_t n = (size_t)snprintf(body, sizeof(body), "{\"work\": \"/w\", \"work_rules\": {");
	for (int i = 0; i < 64; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "%s\"dir%d\": \"hidden\"",
				      i ? ", " : "", i);
	n += (size_t)snprintf(body + n, sizeof(body) - n, "}, \"share_secrets_allow\": [");
	for (int i = 0; i < 64; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "%s\"p%d/.env\"", i ? ", " : "",
				      i);
	snprintf(body + n, sizeof(body) - n, "]}");
	json_t *keep = json_array();
	struct session_request r;
	assert_int_equal(parse(body, &r, keep), 0);
	assert_int_equal(r.nwork_rules, 64);
	assert_string_equal(r.work_rules[63], "dir63:hidden");
	assert_int_equal(r.nshare_allow, 64);
	assert_string_equal(r.work, "/w:rw");
	n = (size_t)snprintf(body, sizeof(body), "{\"work_rules\": {");
	for (int i = 0; i < 65; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "%s\"dir%d\": \"ro\"",
				      i ? ", " : "", i);
	snprintf(body + n, sizeof(body) - n, "}}");
	assert_int_equal(parse(body, &r, keep), -1);
	assert_non_null(strstr(err, "more than 64"));
	json_decref(keep);
}

/* The reader: a document over the bound, not JSON, not an object, duplicate keys. */
static void test_read(void **st)
{
	(void)st;
	const char *bad[] = { "{\"a\": 1, \"a\": 2}", "not json", "[]" };
	for (size_t i = 0; i < 3; i++) {
		int p[2];
		assert_int_equal(pipe(p), 0);
		assert_int_equal(write(p[1], bad[i], strlen(bad[i])), (ssize_t)strlen(bad[i]));
		close(p[1]);
		assert_null(request_json_read(p[0], err, sizeof(err)));
		assert_true(err[0] != '\0');
		close(p[0]);
	}
	FILE *big = tmpfile();
	assert_non_null(big);
	fputc('"', big);
	for (int i = 0; i < REQUEST_JSON_MAX; i++)
		fputc('x', big);
	fputc('"', big);
	fflush(big);
	rewind(big);
	assert_null(request_json_read(fileno(big), err, sizeof(err)));
	assert_non_null(strstr(err, "over"));
	fclose(big);
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "{\"cpus\": 2}", 11), 11);
	close(p[1]);
	json_t *o = request_json_read(p[0], err, sizeof(err));
	close(p[0]);
	assert_non_null(o);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_shape),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_largest),
		cmocka_unit_test(test_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
