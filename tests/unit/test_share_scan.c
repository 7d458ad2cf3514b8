/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_share_scan.c: credential files in a share (session/share_scan.c) — each kind
 * the table lists found with its reason, the look-alikes that hold none left alone (a
 * .env.example, a certificate, an .npmrc naming ${NPM_TOKEN}, a remote with a bare user name),
 * git configs cleaned of every credential and nothing else, the bounds said when met,
 * symbolic links and dependency trees never followed, hostile names quoted. */
#include "session/share_scan.h"

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

#include "lib/mkdirs.h"
#include "lib/tree_remove.h"

static char top[64];

static void put(const char *rel, const char *text)
{
	char p[512], dir[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	snprintf(dir, sizeof(dir), "%s", p);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(mkdirs(dir, 0755), 0);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/test_share_scan.XXXXXX");
	assert_non_null(mkdtemp(top));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char err[128];

	tree_remove(AT_FDCWD, top, err, sizeof(err));
	return 0;
}

static void scan(struct share_scan *s, const struct share_scan_opts *o)
{
	char err[256];
	int fd = open(top, O_RDONLY | O_DIRECTORY);

	assert_true(fd >= 0);
	if (share_scan(fd, o, s, err, sizeof(err)))
		fail_msg("scan failed: %s", err);
	close(fd);
}

static const struct share_found *found(const struct share_scan *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->found[i].path, path))
			return &s->found[i];
	return NULL;
}

static void want(const struct share_scan *s, const char *path, const char *why)
{
	const struct share_found *f = found(s, path);

	if (!f)
		fail_msg("%s not found", path);
	if (!strstr(f->why, why))
		fail_msg("%s found for \"%s\", not \"%s\"", path, f->why, why);
}

static void not_found(const struct share_scan *s, const char *path)
{
	const struct share_found *f = found(s, path);

	if (f)
		fail_msg("%s found (\"%s\") but holds no credential", path, f->why);
}

static const char key[] = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
			  "-----END OPENSSH PRIVATE KEY-----\n";

static void test_each_kind(void **state)
{
	struct share_scan s;

	(void)state;
	put(".env", "# settings\nexport OPENAI_API_KEY=sk-live-123\n");
	put("app/.env.local", "DB_PASSWORD = hunter2\n");
	put(".git-credentials", "https://alice:ghp_abcdefghijklmnop@github.com\n");
	put(".netrc", "machine api.example.com login alice password s3cret\n");
	put(".npmrc", "//registry.npmjs.org/:_authToken=npm_abcdef123456\n");
	put(".pypirc", "[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc\n");
	put(".docker/config.json", "{\"auths\": {\"ghcr.io\": {\"auth\": \"YWxpY2U6c2VjcmV0\"}}}\n");
	put(".aws/credentials", "[default]\naws_access_key_id = AKIA1\naws_secret_access_key = abc/def\n");
	put("deploy/id_ed25519", key);
	put("certs/server.pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n");
	put("tls/server.key", "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n");
	put("gcp/sa.json", "{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE "
			   "KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n\"}\n");
	put("keys/store.p12", "binary");
	put(".git/config", "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = "
			   "https://x-access-token:ghp_0123456789abcdef@github.com/o/r.git\n");
	scan(&s, NULL);
	assert_true(s.complete);
	want(&s, ".env", ".env with values");
	want(&s, "app/.env.local", ".env with values");
	want(&s, ".git-credentials", "stored credentials");
	want(&s, ".netrc", ".netrc password");
	want(&s, ".npmrc", "npm token");
	want(&s, ".pypirc", "PyPI password");
	want(&s, ".docker/config.json", "registry login");
	want(&s, ".aws/credentials", "AWS keys");
	want(&s, "deploy/id_ed25519", "private key");
	want(&s, "certs/server.pem", "private key");
	want(&s, "tls/server.key", "private key");
	want(&s, "gcp/sa.json", "service account");
	want(&s, "keys/store.p12", "key store");
	want(&s, ".git/config", "git remote");
	assert_int_equal(found(&s, ".git/config")->kind, SHARE_FOUND_GIT_CONFIG);
	assert_int_equal(found(&s, ".env")->kind, SHARE_FOUND_FILE);
	assert_int_equal(s.n, 14);
	share_scan_free(&s);
}

static void test_look_alikes(void **state)
{
	struct share_scan s;

	(void)state;
	put(".env.example", "OPENAI_API_KEY=sk-replace-me\n");
	put(".env", "# nothing set yet\n\nOPENAI_API_KEY=\n");
	put(".npmrc", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\nsave-exact=true\n");
	put("certs/ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
	put("deploy/id_ed25519.pub", "ssh-ed25519 AAAAC3Nz alice@host\n");
	put("package.json", "{\"name\": \"x\", \"private_key_path\": \"keys/k\"}\n");
	put(".git/config", "[remote \"origin\"]\n\turl = https://alice@github.com/o/r.git\n"
			   "[remote \"mirror\"]\n\turl = git@github.com:o/r.git\n");
	put(".netrc", "machine example.com login alice\n");
	put("src/config", "password = x\n"); /* not a git config: not under .git */
	scan(&s, NULL);
	assert_true(s.complete);
	for (size_t i = 0; i < s.n; i++)
		fail_msg("%s found (\"%s\") but holds no credential", s.found[i].path, s.found[i].why);
	share_scan_free(&s);
}

static void test_not_followed(void **state)
{
	struct share_scan s;
	char p[512];

	(void)state;
	put("node_modules/pkg/test/key.pem", key);
	put(".venv/lib/site/.env", "A=1\n");
	put(".git/objects/ab/.env", "A=1\n");
	put("real/.env", "A=1\n");
	snprintf(p, sizeof(p), "%s/link", top);
	assert_int_equal(symlink("real", p), 0);
	snprintf(p, sizeof(p), "%s/.env", top);
	assert_int_equal(symlink("/etc/passwd", p), 0);
	put("hidden/.env", "A=1\n");
	{
		const char *skip[] = { "hidden" };
		struct share_scan_opts o = { .skip = skip, .nskip = 1 };

		scan(&s, &o);
	}
	want(&s, "real/.env", "values");
	/* The link named .env is not followed (it is not read), but found by its name: the guest
	 * would read what it points to. "link" (to a directory) is neither followed nor found. */
	want(&s, ".env", "symbolic link");
	assert_int_equal(s.n, 2); /* not through the link, the dependencies, .git's objects */
	share_scan_free(&s);
}

static void test_patterns(void **state)
{
	const char *pat[] = { "*.tfstate", "secrets/*.txt" };
	struct share_scan_opts o = { .patterns = pat, .npatterns = 2 };
	struct share_scan s;

	(void)state;
	put("infra/prod.tfstate", "{}");
	put("secrets/a.txt", "x");
	put("other/secrets/b.txt", "x"); /* a path pattern is matched from the top */
	scan(&s, &o);
	want(&s, "infra/prod.tfstate", "global policy");
	want(&s, "secrets/a.txt", "global policy");
	not_found(&s, "other/secrets/b.txt");
	share_scan_free(&s);
}

static void test_bounds(void **state)
{
	struct share_scan_opts o = { .entries = 50 };
	struct share_scan s;
	char p[64];

	(void)state;
	for (int i = 0; i < 80; i++) {
		snprintf(p, sizeof(p), "many/f%d", i);
		put(p, "x");
	}
	scan(&s, &o);
	assert_false(s.complete);
	assert_non_null(strstr(s.stopped, "after 50 entries"));
	assert_true(s.entries <= 51);
	share_scan_free(&s);

	o = (struct share_scan_opts){ .depth = 2 };
	put("a/b/c/d/.env", "A=1\n");
	scan(&s, &o);
	assert_false(s.complete);
	assert_non_null(strstr(s.stopped, "deeper than its bound"));
	not_found(&s, "a/b/c/d/.env");
	share_scan_free(&s);
}

static void test_hostile_names(void **state)
{
	struct share_scan s;
	char q[64];

	(void)state;
	put("we\nird\xff/.env", "A=1\n");
	scan(&s, NULL);
	want(&s, "we\nird\xff/.env", "values");
	share_scan_quote(s.found[0].path, q, sizeof(q));
	assert_string_equal(q, "we\\x0aird\\xff/.env");
	share_scan_quote("back\\slash", q, sizeof(q));
	assert_string_equal(q, "back\\x5cslash");
	share_scan_quote("0123456789012345678901234567890123456789", q, 16);
	assert_true(strlen(q) < 16 && strstr(q, "..."));
	share_scan_free(&s);
}

static void clean(const char *in, const char *want_out, int want_n, const char *want_fix)
{
	char *out = NULL, fix[512];
	size_t n = 0;
	int t = share_git_clean(in, strlen(in), &out, &n, fix, sizeof(fix));

	if (t != want_n)
		fail_msg("took %d out of %s, want %d", t, in, want_n);
	if (!want_n) {
		assert_null(out);
		return;
	}
	if (strlen(out) != n || strcmp(out, want_out))
		fail_msg("cleaned to:\n%s\nwant:\n%s", out, want_out);
	if (want_fix && strcmp(fix, want_fix))
		fail_msg("fix:\n%s\nwant:\n%s", fix, want_fix);
	free(out);
}

static void test_git_clean(void **state)
{
	(void)state;
	clean("[remote \"origin\"]\n\turl = https://x-access-token:ghp_abc@github.com/o/r.git\n"
	      "\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
	      "[remote \"origin\"]\n\turl = https://github.com/o/r.git\n"
	      "\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
	      1, "git remote set-url origin https://github.com/o/r.git\n");
	/* A token as the user name alone, a push URL, quotes. */
	clean("[remote \"up\"]\n\tpushurl = \"https://ghp_0123456789@example.com/r\"\n",
	      "[remote \"up\"]\n\tpushurl = \"https://example.com/r\"\n", 1,
	      "git remote set-url --push up https://example.com/r\n");
	/* In a section's name, and an extraheader line: both go. */
	clean("[url \"https://oauth2:glpat-xyz@gitlab.com/\"]\n\tinsteadOf = https://gitlab.com/\n"
	      "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M=\n"
	      "[core]\n\tbare = false\n",
	      "[url \"https://gitlab.com/\"]\n\tinsteadOf = https://gitlab.com/\n"
	      "[http \"https://github.com/\"]\n[core]\n\tbare = false\n",
	      2, "");
	/* A bare user name, ssh forms and no URL at all: nothing to take. */
	clean("[remote \"o\"]\n\turl = https://alice@github.com/o/r.git\n\turl = "
	      "ssh://git@github.com/o/r\n\turl = git@github.com:o/r.git\n",
	      NULL, 0, NULL);
	/* No trailing newline, CRLF lines. */
	clean("[remote \"o\"]\r\n\turl = http://u:p@h/x\r\n\turl = http://u:p@h/y",
	      "[remote \"o\"]\r\n\turl = http://h/x\r\n\turl = http://h/y", 2, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_each_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_look_alikes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_patterns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_names, setup, teardown),
		cmocka_unit_test(test_git_clean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
