/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_audit.c: the audit log's chain verifies, continues across reopen, and an
 * edited, deleted, reordered or inserted line is reported at the first line it breaks. */
#include "broker/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/sha.h>

#define N 10

static char dir[64], path[128], copy[128], err[256];
static char *lines[64]; /* the log's lines, each with its '\n' */
static size_t nlines;

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_audit.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/audit.log", dir);
	snprintf(copy, sizeof(copy), "%s/copy.log", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void record(struct audit *a, unsigned i)
{
	static const char *const two[] = { "GITHUB_TOKEN", "NPM_TOKEN" };
	char p[32];
	snprintf(p, sizeof(p), "/v1/items/%u", i);
	struct audit_record r = {
		.session = "s-1234",
		.method = "GET",
		.host = "api.example",
		.port = 443,
		.path = p,
		.rule = "github",
		.secrets = two,
		.n_secrets = i % 2 ? 2 : 0,
		.decision = i % 3 ? "allow" : "deny",
		.layer = i % 3 ? "approval" : "global",
		.approval = i % 3 ? "0123456789ab" : NULL,
		.status = i % 3 ? 200 : 403,
		.outcome = i % 3 ? AUDIT_OUTCOME_ANSWERED : AUDIT_OUTCOME_REFUSED,
		.bytes_out = 100 + i,
		.bytes_in = 2000 + i,
		.duration_us = 1500,
		.time_ms = 1700000000123ULL + i,
	};
	assert_int_equal(audit_append(a, &r), 0);
}

static void load_lines(void)
{
	for (size_t i = 0; i < nlines; i++)
		free(lines[i]);
	nlines = 0;
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *l = NULL;
	size_t cap = 0;
	while (getline(&l, &cap, f) > 0) {
		assert_true(nlines < 64);
		lines[nlines++] = strdup(l);
	}
	free(l);
	fclose(f);
}

/* A fresh log of N records, loaded into lines[]. */
static void make_log(void)
{
	unlink(path);
	struct audit *a;
	assert_int_equal(audit_open(path, &a, err, sizeof(err)), 0);
	for (unsigned i = 0; i < N; i++)
		record(a, i);
	assert_int_equal(audit_close(a), 0);
	load_lines();
	assert_int_equal(nlines, N);
}

/* Verifies a file made of the given lines; returns the first broken line, 0 if intact. */
static size_t verify_lines(char **ls, size_t n)
{
	FILE *f = fopen(copy, "w");
	for (size_t i = 0; i < n; i++)
		fputs(ls[i], f);
	fclose(f);
	f = fopen(copy, "r");
	size_t total, bad;
	char head[AUDIT_HASH_HEX + 1], why[256];
	int rc = audit_verify(f, &total, &bad, head, why, sizeof(why));
	fclose(f);
	assert_true(rc == 0 || rc == 1);
	if (rc == 0)
		assert_int_equal(total, n);
	return rc ? bad : 0;
}

static void hex_sha256(const char *s, size_t len, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)s, len, md);
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

static void test_chain_verifies(void **state)
{
	(void)state;
	make_log();
	assert_int_equal(verify_lines(lines, nlines), 0);

	/* The links, recomputed independently of audit.c. */
	char want[65];
	hex_sha256(AUDIT_GENESIS, strlen(AUDIT_GENESIS), want);
	for (size_t i = 0; i < nlines; i++) {
		json_error_t je;
		json_t *o = json_loads(lines[i], 0, &je);
		assert_non_null(o);
		assert_string_equal(json_string_value(json_object_get(o, "prev")), want);
		json_decref(o);
		hex_sha256(lines[i], strlen(lines[i]) - 1, want);
	}
	/* The head is the hash of the last line. */
	FILE *f = fopen(path, "r");
	size_t total, bad;
	char head[AUDIT_HASH_HEX + 1], why[256];
	assert_int_equal(audit_verify(f, &total, &bad, head, why, sizeof(why)), 0);
	fclose(f);
	assert_string_equal(head, want);

	/* Fields as documented, and no value field. */
	json_t *o = json_loads(lines[1], 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "time")),
			    "2023-11-14T22:13:20.124Z");
	/* Every injected secret is named, in order. */
	json_t *names = json_object_get(o, "secrets");
	assert_int_equal(json_array_size(names), 2);
	assert_string_equal(json_string_value(json_array_get(names, 0)), "GITHUB_TOKEN");
	assert_string_equal(json_string_value(json_array_get(names, 1)), "NPM_TOKEN");
	assert_int_equal(json_integer_value(json_object_get(o, "v")), AUDIT_VERSION);
	assert_int_equal(json_integer_value(json_object_get(o, "status")), 200);
	assert_string_equal(json_string_value(json_object_get(o, "outcome")), "answered");
	assert_int_equal(json_integer_value(json_object_get(o, "bytes_in")), 2001);
	assert_string_equal(json_string_value(json_object_get(o, "layer")), "approval");
	assert_string_equal(json_string_value(json_object_get(o, "approval")), "0123456789ab");
	assert_true(json_is_null(json_object_get(o, "target_sha256"))); /* none given */
	assert_int_equal(json_object_size(o), 19);
	json_decref(o);
}

static void test_reopen_continues_chain(void **state)
{
	(void)state;
	make_log();
	struct audit *a;
	assert_int_equal(audit_open(path, &a, err, sizeof(err)), 0);
	/* A second writer is refused while the first holds the log. */
	struct audit *b;
	assert_int_equal(audit_open(path, &b, err, sizeof(err)), -EWOULDBLOCK);
	audit_set_sync_every(a, 4);
	for (unsigned i = N; i < N + 5; i++)
		record(a, i);
	assert_int_equal(audit_close(a), 0);
	load_lines();
	assert_int_equal(nlines, N + 5);
	assert_int_equal(verify_lines(lines, nlines), 0);
}

static void test_edit_detected(void **state)
{
	(void)state;
	make_log();
	for (size_t k = 0; k < N - 1; k++) {
		char *saved = lines[k];
		lines[k] = strdup(saved);
		char *h = strstr(lines[k], "api.example");
		h[0] = 'A'; /* one byte */
		/* Line k+1 (1-based k+2) no longer links to it. */
		assert_int_equal(verify_lines(lines, nlines), k + 2);
		free(lines[k]);
		lines[k] = saved;
	}
	/* Editing a line's own prev breaks that line. */
	char *saved = lines[4];
	lines[4] = strdup(saved);
	strstr(lines[4], "\"prev\":\"")[8] ^= 1;
	assert_int_equal(verify_lines(lines, nlines), 5);
	free(lines[4]);
	/* A line that is not JSON at all. */
	lines[4] = "not json\n";
	assert_int_equal(verify_lines(lines, nlines), 5);
	lines[4] = saved;
}

static void test_delete_detected(void **state)
{
	(void)state;
	make_log();
	char *ls[64];
	for (size_t k = 0; k < N - 1; k++) {
		size_t n = 0;
		for (size_t i = 0; i < nlines; i++)
			if (i != k)
				ls[n++] = lines[i];
		assert_int_equal(verify_lines(ls, n), k + 1);
	}
}

static void test_reorder_detected(void **state)
{
	(void)state;
	make_log();
	for (size_t k = 0; k + 1 < N; k++) {
		char *t = lines[k];
		lines[k] = lines[k + 1];
		lines[k + 1] = t;
		assert_int_equal(verify_lines(lines, nlines), k + 1);
		lines[k + 1] = lines[k];
		lines[k] = t;
	}
}

static void test_insert_detected(void **state)
{
	(void)state;
	make_log();
	char *ls[64];
	for (size_t k = 0; k < N; k++) {
		size_t n = 0;
		for (size_t i = 0; i < nlines; i++) {
			if (i == k)
				ls[n++] = lines[(k + 3) % N]; /* a copy of a real line */
			ls[n++] = lines[i];
		}
		assert_int_equal(verify_lines(ls, n), k + 1);
	}
}

static void test_incomplete_line(void **state)
{
	(void)state;
	make_log();
	char *saved = lines[N - 1];
	lines[N - 1] = strndup(saved, strlen(saved) - 5);
	assert_int_equal(verify_lines(lines, nlines), N);
	free(lines[N - 1]);
	lines[N - 1] = saved;

	/* The writer refuses to continue a log with a cut last line, and writes nothing. */
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "{\"v\":1", 6), 6);
	close(fd);
	struct stat before, after;
	stat(path, &before);
	struct audit *a;
	assert_int_equal(audit_open(path, &a, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "incomplete"));
	stat(path, &after);
	assert_int_equal(before.st_size, after.st_size);
}

static void test_hostile_fields(void **state)
{
	(void)state;
	unlink(path);
	struct audit *a;
	assert_int_equal(audit_open(path, &a, err, sizeof(err)), 0);
	char longpath[3 * AUDIT_FIELD_MAX];
	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	struct audit_record r = {
		.method = "GET\r\nX-Injected: 1",
		.host = "h\xff\xfe.example", /* not UTF-8 */
		.path = longpath,
		.decision = "deny",
	};
	assert_int_equal(audit_append(a, &r), 0);
	struct audit_record empty = { 0 };
	assert_int_equal(audit_append(a, &empty), 0);
	assert_int_equal(audit_close(a), 0);
	load_lines();
	assert_int_equal(nlines, 2);
	assert_int_equal(verify_lines(lines, nlines), 0);
	json_t *o = json_loads(lines[0], 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "method")),
			    "GET%0D%0AX-Injected: 1");
	assert_string_equal(json_string_value(json_object_get(o, "host")), "h%FF%FE.example");
	assert_int_equal(strlen(json_string_value(json_object_get(o, "path"))), AUDIT_FIELD_MAX);
	assert_int_equal(json_array_size(json_object_get(o, "secrets")), 0);
	assert_true(json_is_null(json_object_get(o, "outcome")));
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_verifies),
		cmocka_unit_test(test_reopen_continues_chain),
		cmocka_unit_test(test_edit_detected),
		cmocka_unit_test(test_delete_detected),
		cmocka_unit_test(test_reorder_detected),
		cmocka_unit_test(test_insert_detected),
		cmocka_unit_test(test_incomplete_line),
		cmocka_unit_test(test_hostile_fields),
	};
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	for (size_t i = 0; i < nlines; i++)
		free(lines[i]);
	return rc;
}
