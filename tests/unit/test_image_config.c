/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_image_config.c: image.json as the image store reads it (image/config.c) —
 * every field checked for type, count, length and range, unknown keys refused — a write read
 * back, and image_open on a store made by hand: found, not found, damaged in each way. */
#include "image/image_internal.h"

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

#define HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static json_t *valid_doc(void)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:{s:[s,s,s], s:s, s:i, s:i, s:[i], s:[s,s]}, "
			 "s:{s:s, s:[s]}}",
			 "digest", "sha256:" HEX, "name", "py", "source", "mmdebstrap:bookworm",
			 "created", "2025-01-02T03:04:05Z", "size", 1234, "config", "env",
			 "PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", "cwd", "/work", "uid",
			 1000, "gid", 1000, "gids", 2000, "cmd", "/bin/sh", "-l", "recipe", "suite",
			 "bookworm", "packages", "python3");
}

/* Parses DOC (consumed); returns the result, WHY holding the reason. */
static int parse(json_t *doc, struct image_meta *m, struct image_config *c, char *why, size_t n)
{
	char *text = json_dumps(doc, 0);
	assert_non_null(text);
	json_decref(doc);
	int rc = image_json_parse(text, strlen(text), m, c, why, n);
	free(text);
	return rc;
}

/* DOC with config.KEY (or the top-level KEY when TOP) set to V, must be refused naming WANT. */
static void refused(const char *key, int top, json_t *v, const char *want)
{
	json_t *doc = valid_doc();
	struct image_meta m;
	struct image_config c;
	char why[512] = "";

	json_object_set_new(top ? doc : json_object_get(doc, "config"), key, v);
	assert_int_equal(parse(doc, &m, &c, why, sizeof(why)), -1);
	if (!strstr(why, want))
		fail_msg("%s: expected '%s' in '%s'", key, want, why);
	assert_int_equal(c.nenv, 0); /* nothing left allocated on failure */
}

static void test_valid(void **state)
{
	(void)state;
	struct image_meta m;
	struct image_config c;
	char why[512] = "";

	assert_int_equal(parse(valid_doc(), &m, &c, why, sizeof(why)), 0);
	assert_string_equal(m.digest, "sha256:" HEX);
	assert_string_equal(m.name, "py");
	assert_int_equal(m.size, 1234);
	assert_int_equal(c.nenv, 3);
	assert_null(c.env[3]);
	assert_string_equal(image_config_getenv(&c, "HOME"), "HOME=/root");
	assert_string_equal(c.cwd, "/work");
	assert_int_equal(c.uid, 1000);
	assert_int_equal(c.ngids, 1);
	assert_int_equal(c.gids[0], 2000);
	assert_int_equal(c.ncmd, 2);
	assert_string_equal(c.cmd[1], "-l");
	assert_null(c.cmd[2]);
	image_config_free(&c);
}

static void test_bad_types(void **state)
{
	(void)state;
	refused("env", 0, json_string("PATH=/bin"), "config.env is not an array");
	/* What no session could start with: a newline (the run directory keeps the environment
	 * one entry per line) or more than an exec request has room for. */
	refused("env", 0, json_pack("[sss]", "PATH=/bin", "HOME=/", "A=1\nB=2"),
		"config.env[2] holds a newline");
	json_t *big = json_pack("[ss]", "PATH=/bin", "HOME=/");
	char val[4000];
	memset(val, 'x', sizeof(val) - 1);
	val[sizeof(val) - 1] = '\0';
	for (int i = 0; i < 9; i++) {
		char e[4100];
		snprintf(e, sizeof(e), "V%d=%s", i, val);
		json_array_append_new(big, json_string(e));
	}
	refused("env", 0, big, "config.env is over 32768 bytes");
	refused("cmd", 0, json_pack("[i]", 1), "config.cmd[0] is not a string");
	refused("cwd", 0, json_integer(5), "config.cwd is not an absolute path");
	refused("uid", 0, json_string("0"), "config.uid");
	refused("gid", 0, json_real(1.5), "config.gid");
	refused("gids", 0, json_pack("[s]", "wheel"), "config.gids[0]");
	refused("gids", 0, json_object(), "config.gids");
	refused("config", 1, json_array(), "config is not an object");
	refused("size", 1, json_string("1"), "size");
	refused("size", 1, json_integer(-1), "size");
	refused("digest", 1, json_string("sha256:" HEX "00"), "digest");
	refused("digest", 1, json_string("sha512:" HEX), "digest");
	refused("name", 1, json_string("../x"), "name");
	refused("created", 1, json_string("yesterday"), "created");
	refused("source", 1, json_null(), "source");
	refused("recipe", 1, json_pack("{s:s}", "suite", "bookworm"), "recipe");
}

static void test_counts_and_lengths(void **state)
{
	(void)state;
	json_t *env = json_pack("[s,s]", "PATH=/bin", "HOME=/");
	for (int i = 0; i < IMAGE_ENV_MAX - 1; i++)
		json_array_append_new(env, json_sprintf("V%d=x", i));
	refused("env", 0, env, "config.env has 1025 entries (at most 1024)");
	json_t *cmd = json_array(), *gids = json_array();
	for (int i = 0; i <= IMAGE_CMD_MAX; i++)
		json_array_append_new(cmd, json_string("x"));
	refused("cmd", 0, cmd, "config.cmd has 1025 entries");
	for (int i = 0; i <= IMAGE_GIDS_MAX; i++)
		json_array_append_new(gids, json_integer(i));
	refused("gids", 0, gids, "config.gids is not an array of at most 32");

	char *big = malloc(IMAGE_STR_MAX + 1);
	assert_non_null(big);
	memset(big, 'x', IMAGE_STR_MAX);
	memcpy(big, "K=", 2);
	big[IMAGE_STR_MAX] = '\0'; /* one byte too long */
	refused("env", 0, json_pack("[s,s,s]", "PATH=/bin", "HOME=/", big), "config.env[2]");
	big[IMAGE_STR_MAX - 1] = '\0'; /* the longest allowed */
	json_t *doc = valid_doc();
	json_object_set_new(json_object_get(doc, "config"), "env",
			    json_pack("[s,s,s]", "PATH=/bin", "HOME=/", big));
	struct image_meta m;
	struct image_config c;
	char why[512] = "";
	assert_int_equal(parse(doc, &m, &c, why, sizeof(why)), 0);
	image_config_free(&c);
	free(big);
}

static void test_env_rules(void **state)
{
	(void)state;
	refused("env", 0, json_pack("[s]", "HOME=/"), "config.env lacks PATH or HOME");
	refused("env", 0, json_pack("[s]", "PATH=/bin"), "config.env lacks PATH or HOME");
	refused("env", 0, json_pack("[s,s,s]", "PATH=/bin", "HOME=/", "PATH=/x"), "PATH twice");
	refused("env", 0, json_pack("[s,s,s]", "PATH=/bin", "HOME=/", "NOVALUE"), "KEY=VALUE");
	refused("env", 0, json_pack("[s,s,s]", "PATH=/bin", "HOME=/", "=x"), "KEY=VALUE");
	refused("cwd", 0, json_string("work"), "config.cwd is not an absolute path");
	refused("cwd", 0, json_string(""), "config.cwd is not an absolute path");
}

static void test_ids(void **state)
{
	(void)state;
	refused("uid", 0, json_integer(4294967295LL), "config.uid is not an integer 0..4294967294");
	refused("uid", 0, json_integer(-1), "config.uid");
	refused("gids", 0, json_pack("[I]", (json_int_t)1 << 40), "config.gids[0]");
	json_t *doc = valid_doc();
	json_object_set_new(json_object_get(doc, "config"), "uid", json_integer(4294967294LL));
	struct image_meta m;
	struct image_config c;
	char why[512] = "";
	assert_int_equal(parse(doc, &m, &c, why, sizeof(why)), 0);
	assert_int_equal(c.uid, 4294967294u);
	image_config_free(&c);
}

static void test_unknown_keys_and_syntax(void **state)
{
	(void)state;
	refused("privileged", 0, json_true(), "config has an unknown key 'privileged'");
	refused("extra", 1, json_true(), "image.json has an unknown key 'extra'");
	struct image_meta m;
	struct image_config c;
	char why[512] = "";
	const char *dup = "{\"digest\": \"a\", \"digest\": \"b\"}";
	assert_int_equal(image_json_parse(dup, strlen(dup), &m, &c, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "duplicate"));
	json_t *doc = valid_doc();
	char *text = json_dumps(doc, 0);
	json_decref(doc);
	assert_int_equal(image_json_parse(text, strlen(text) / 2, &m, &c, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "image.json line 1"));
	free(text);
	assert_int_equal(image_json_parse("[]", 2, &m, &c, why, sizeof(why)), -1);
	assert_string_equal(why, "image.json is not an object");
}

/* What image_json_write writes, image_json_parse reads back the same. */
static void test_write_read(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_image_config.XXXXXX", path[64], text[8192], why[512] = "";
	struct image_meta m, m2;
	struct image_config c, c2;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(parse(valid_doc(), &m, &c, why, sizeof(why)), 0);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(image_json_write(dfd, &m, &c, NULL, why, sizeof(why)), 0);
	/* never over an existing file */
	assert_int_equal(image_json_write(dfd, &m, &c, NULL, why, sizeof(why)), -1);
	snprintf(path, sizeof(path), "%s/image.json", dir);
	int fd = open(path, O_RDONLY);
	ssize_t n = read(fd, text, sizeof(text));
	close(fd);
	assert_true(n > 0 && text[n - 1] == '\n');
	assert_int_equal(image_json_parse(text, (size_t)n, &m2, &c2, why, sizeof(why)), 0);
	assert_memory_equal(&m, &m2, sizeof(m));
	assert_int_equal(c2.nenv, c.nenv);
	for (size_t i = 0; i < c.nenv; i++)
		assert_string_equal(c.env[i], c2.env[i]);
	assert_string_equal(c2.cmd[0], "/bin/sh");
	assert_int_equal(c2.gids[0], 2000);
	image_config_free(&c);
	image_config_free(&c2);
	unlinkat(dfd, "image.json", 0);
	close(dfd);
	rmdir(dir);
}

static void test_names(void **state)
{
	(void)state;
	static const char *const good[] = { "py", "a", "A.b_c-d", "3.12" };
	static const char *const bad[] = { "", "../x", ".hidden", "-x", "a/b", "a b", "x\n", "é" };
	char err[256];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(image_name_check(good[i], err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(image_name_check(bad[i], err, sizeof(err)), -1);
	char longest[IMAGE_NAME_MAX + 2];
	memset(longest, 'a', sizeof(longest));
	longest[IMAGE_NAME_MAX] = '\0';
	assert_int_equal(image_name_check(longest, err, sizeof(err)), 0);
	longest[IMAGE_NAME_MAX] = 'a';
	longest[IMAGE_NAME_MAX + 1] = '\0';
	assert_int_equal(image_name_check(longest, err, sizeof(err)), -1);
}

/* A store made by hand under BULKHEAD_CACHE: image_open finds, refuses and explains. */
static void sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

static void open_fails(const char *name, const char *want)
{
	struct image img;
	char err[1024] = "";
	if (image_open(name, &img, err, sizeof(err)) != -1)
		fail_msg("image_open(%s) succeeded", name);
	if (!strstr(err, want))
		fail_msg("image_open(%s): expected '%s' in '%s'", name, want, err);
}

static void test_open(void **state)
{
	(void)state;
	char top[] = "/tmp/test_image_open.XXXXXX", text[8192], path[256], why[256];
	struct image img;
	char err[1024] = "";

	assert_non_null(mkdtemp(top));
	setenv("BULKHEAD_CACHE", top, 1);
	open_fails("py", "image 'py' not found: build it with 'bulkhead image build py ...'");
	const char *S = "images";
	sh("cd %s && mkdir -p %s/sha256/%s/rootfs %s/names && ln -s ../sha256/%s %s/names/py", top,
	   S, HEX, S, HEX, S);
	json_t *doc = valid_doc();
	char *t = json_dumps(doc, 0);
	json_decref(doc);
	snprintf(path, sizeof(path), "%s/%s/sha256/%s/image.json", top, S, HEX);
	FILE *f = fopen(path, "w");
	fputs(t, f);
	fclose(f);
	free(t);

	assert_int_equal(image_open("py", &img, err, sizeof(err)), 0);
	snprintf(text, sizeof(text), "%s/images/sha256/%s/rootfs", top, HEX);
	assert_string_equal(img.rootfs, text);
	assert_string_equal(img.digest, "sha256:" HEX);
	assert_string_equal(img.name, "py");
	assert_string_equal(img.cfg.cwd, "/work");
	image_close(&img);

	open_fails("../py", "bad image name");
	sh("cd %s/%s/names && ln -s ../../../etc evil && ln -s ../sha256/%.63s0 other", top, S,
	   HEX);
	open_fails("evil", "image 'evil' is damaged: names/evil: not a link to ../sha256/<hex>");
	open_fails("other", "image 'other' is damaged: sha256/");
	sh("cd %s/%s/sha256/%s && mv rootfs r && ln -s / rootfs", top, S, HEX);
	open_fails("py", "damaged: rootfs is missing or not a directory");
	sh("cd %s/%s/sha256/%s && rm rootfs && mv r rootfs", top, S, HEX);
	sh("cd %s/%s/sha256/%s && sed -i 's/\"uid\": 1000/\"uid\": -5/' image.json", top, S, HEX);
	open_fails("py", "image 'py' is damaged: config.uid is not an integer");
	/* a sound image.json that names another digest than its directory */
	snprintf(why, sizeof(why), "%.63s1", HEX);
	sh("cd %s/%s/sha256/%s && sed -i 's/\"uid\": -5/\"uid\": 1/; s/sha256:%s/sha256:%s/' "
	   "image.json",
	   top, S, HEX, HEX, why);
	open_fails("py", "names digest sha256:");
	sh("rm -rf %s", top);
	unsetenv("BULKHEAD_CACHE");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_bad_types),
		cmocka_unit_test(test_counts_and_lengths),
		cmocka_unit_test(test_env_rules),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_unknown_keys_and_syntax),
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
