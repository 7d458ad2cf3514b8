/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vault.c: the vault round-trips, refuses every changed or cut byte, wrong
 * keys and loose key files, validates names, re-keys, and survives a failed write. */
#include "broker/vault.h"
#include "broker/vault_internal.h"
#include "broker/vault_live.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

/* A cheap scrypt cost so passphrase tests stay fast; the format records it. */
static const struct vault_kdf fast_kdf = { .log2_n = 10, .r = 8, .p = 1 };

static char dir[64], vpath[128], key1[128], key2[128], pass1[128], pass2[128];
static char err[512];

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static unsigned char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static unsigned char buf[1 << 20];
	*len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	unsigned char *copy = malloc(*len + 1);
	memcpy(copy, buf, *len);
	return copy;
}

static struct vault_cred *cred(enum vault_cred_kind kind, const char *path)
{
	struct vault_cred *c = NULL;
	assert_int_equal(vault_cred_load(kind, path, &c, err, sizeof(err)), 0);
	return c;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_vault.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(vpath, sizeof(vpath), "%s/vault", dir);
	snprintf(key1, sizeof(key1), "%s/k1", dir);
	snprintf(key2, sizeof(key2), "%s/k2", dir);
	snprintf(pass1, sizeof(pass1), "%s/p1", dir);
	snprintf(pass2, sizeof(pass2), "%s/p2", dir);
	if (vault_key_file_create(key1, err, sizeof(err)) ||
	    vault_key_file_create(key2, err, sizeof(err)))
		return -1;
	write_file(pass1, "correct horse battery staple\n", 29, 0600);
	write_file(pass2, "correct horse battery stapl3\n", 29, 0600);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A fresh vault at vpath under key1 with two secrets. */
static void make_vault(void)
{
	unlink(vpath);
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	struct vault *v;
	assert_int_equal(vault_create(vpath, c, NULL, err, sizeof(err)), 0);
	assert_int_equal(vault_open(vpath, c, VAULT_RDWR, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_put(v, "GITHUB_TOKEN", (const unsigned char *)"ghp_abc123", 10, err,
				   sizeof(err)),
			 0);
	assert_int_equal(
		vault_put(v, "api.key", (const unsigned char *)"k-XYZ", 5, err, sizeof(err)), 0);
	vault_close(v);
	vault_cred_free(c);
}

static void check_value(struct vault *v, const char *name, const char *want)
{
	unsigned char *b;
	size_t n;
	assert_int_equal(vault_get(v, name, &b, &n), 0);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(b, want, n);
	vault_secret_free(b, n);
}

static void test_round_trip(void **state)
{
	(void)state;
	make_vault();
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	struct vault *v;
	assert_int_equal(vault_open(vpath, c, VAULT_RDONLY, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_count(v), 2);
	struct vault_entry_info e;
	assert_int_equal(vault_entry(v, 0, &e), 0);
	assert_string_equal(e.name, "GITHUB_TOKEN"); /* sorted: 'G' < 'a' */
	assert_int_equal(e.size, 10);
	assert_true(e.created <= e.updated);
	assert_int_equal(vault_entry(v, 1, &e), 0);
	assert_string_equal(e.name, "api.key");
	assert_int_equal(vault_entry(v, 2, &e), -ENOENT);
	check_value(v, "GITHUB_TOKEN", "ghp_abc123");
	check_value(v, "api.key", "k-XYZ");
	unsigned char *b;
	size_t n;
	assert_int_equal(vault_get(v, "missing", &b, &n), -ENOENT);
	/* Read-only handles cannot write. */
	assert_int_equal(vault_put(v, "x", (const unsigned char *)"y", 1, err, sizeof(err)),
			 -EBADF);
	vault_close(v);

	/* Replace one, remove the other, add a third; all of it survives a reopen. */
	assert_int_equal(vault_open(vpath, c, VAULT_RDWR, &v, err, sizeof(err)), 0);
	assert_int_equal(
		vault_put(v, "GITHUB_TOKEN", (const unsigned char *)"ghp_new", 7, err, sizeof(err)),
		0);
	assert_int_equal(vault_rm(v, "api.key", err, sizeof(err)), 0);
	assert_int_equal(vault_rm(v, "api.key", err, sizeof(err)), -ENOENT);
	assert_int_equal(vault_put(v, "B", (const unsigned char *)"bee", 3, err, sizeof(err)), 0);
	vault_close(v);
	assert_int_equal(vault_open(vpath, c, VAULT_RDONLY, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_count(v), 2);
	check_value(v, "B", "bee");
	check_value(v, "GITHUB_TOKEN", "ghp_new");
	vault_close(v);
	vault_cred_free(c);

	/* No plaintext value or name in the file. */
	size_t len;
	unsigned char *f = read_file(vpath, &len);
	assert_null(memmem(f, len, "ghp_new", 7));
	assert_null(memmem(f, len, "GITHUB_TOKEN", 12));
	free(f);
}

static void test_nonce_fresh_per_write(void **state)
{
	(void)state;
	make_vault();
	size_t l1, l2;
	unsigned char *a = read_file(vpath, &l1);
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	struct vault *v;
	assert_int_equal(vault_open(vpath, c, VAULT_RDWR, &v, err, sizeof(err)), 0);
	/* Same content again (same timestamps within a second is fine: nonce must differ). */
	assert_int_equal(
		vault_put(v, "api.key", (const unsigned char *)"k-XYZ", 5, err, sizeof(err)), 0);
	vault_close(v);
	vault_cred_free(c);
	unsigned char *b = read_file(vpath, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, 36);			  /* magic, version, kdf, salt kept */
	assert_memory_not_equal(a + 36, b + 36, 12);	  /* nonce */
	assert_memory_not_equal(a + 56, b + 56, l1 - 56); /* ciphertext and tag */
	free(a);
	free(b);
}

static void test_wrong_key_refused(void **state)
{
	(void)state;
	make_vault();
	struct vault_cred *k2 = cred(VAULT_CRED_KEY_FILE, key2);
	struct vault_cred *p1 = cred(VAULT_CRED_PASSPHRASE, pass1);
	struct vault_cred *p2 = cred(VAULT_CRED_PASSPHRASE, pass2);
	struct vault *v = NULL;
	assert_int_equal(vault_open(vpath, k2, VAULT_RDONLY, &v, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "wrong key"));
	assert_int_equal(vault_open(vpath, p1, VAULT_RDONLY, &v, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "key file"));

	char pv[160];
	snprintf(pv, sizeof(pv), "%s/pvault", dir);
	assert_int_equal(vault_create(pv, p1, &fast_kdf, err, sizeof(err)), 0);
	assert_int_equal(vault_open(pv, p1, VAULT_RDONLY, &v, err, sizeof(err)), 0);
	vault_close(v);
	assert_int_equal(vault_open(pv, p2, VAULT_RDONLY, &v, err, sizeof(err)), -EBADMSG);
	assert_int_equal(vault_open(pv, k2, VAULT_RDONLY, &v, err, sizeof(err)), -EINVAL);
	/* Creating over an existing vault is refused and leaves it alone. */
	size_t l1, l2;
	unsigned char *a = read_file(pv, &l1);
	assert_int_equal(vault_create(pv, k2, NULL, err, sizeof(err)), -EEXIST);
	unsigned char *b = read_file(pv, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, l1);
	free(a);
	free(b);
	vault_cred_free(k2);
	vault_cred_free(p1);
	vault_cred_free(p2);
}

/* Writes data to vpath's sibling and expects vault_open to refuse it. */
static int open_copy(const unsigned char *data, size_t len, const struct vault_cred *c)
{
	char bad[160];
	snprintf(bad, sizeof(bad), "%s/bad", dir);
	write_file(bad, data, len, 0600);
	struct vault *v = NULL;
	int rc = vault_open(bad, c, VAULT_RDWR, &v, err, sizeof(err));
	if (rc == 0)
		vault_close(v);
	/* A refused vault is never rewritten. */
	size_t l2;
	unsigned char *after = read_file(bad, &l2);
	assert_int_equal(l2, len);
	assert_memory_equal(after, data, len);
	free(after);
	return rc;
}

static void test_every_byte_flip_refused(void **state)
{
	(void)state;
	make_vault();
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	size_t len;
	unsigned char *f = read_file(vpath, &len);
	assert_int_equal(open_copy(f, len, c), 0); /* the copy itself is fine */
	static const unsigned char masks[] = { 0x01, 0x80, 0xff };
	for (size_t i = 0; i < len; i++)
		for (size_t m = 0; m < sizeof(masks); m++) {
			f[i] ^= masks[m];
			int rc = open_copy(f, len, c);
			if (rc >= 0)
				fail_msg("flip of byte %zu with 0x%02x was accepted", i, masks[m]);
			f[i] ^= masks[m];
		}
	free(f);
	vault_cred_free(c);
}

static void test_every_truncation_refused(void **state)
{
	(void)state;
	make_vault();
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	size_t len;
	unsigned char *f = read_file(vpath, &len);
	for (size_t n = 0; n < len; n++)
		if (open_copy(f, n, c) >= 0)
			fail_msg("truncation to %zu of %zu bytes was accepted", n, len);
	/* And one byte more. */
	unsigned char *g = malloc(len + 1);
	memcpy(g, f, len);
	g[len] = 0;
	assert_true(open_copy(g, len + 1, c) < 0);
	free(g);
	free(f);
	vault_cred_free(c);
}

static void test_header_tampering_refused(void **state)
{
	(void)state;
	make_vault();
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	size_t len;
	unsigned char *f = read_file(vpath, &len);

	f[9] = 3; /* a future version */
	assert_int_equal(open_copy(f, len, c), -EPROTO);
	assert_non_null(strstr(err, "version 3"));
	f[9] = 2;

	/* Turned into a "passphrase" vault with a monstrous scrypt cost: refused before any
	 * derivation runs (the header bounds are checked first). */
	f[10] = 2;
	f[11] = 40;
	f[15] = 8;
	f[19] = 1;
	assert_int_equal(open_copy(f, len, c), -EPROTO);
	f[10] = 1;
	f[11] = 0;
	f[15] = 0;
	f[19] = 0;

	/* A header spliced from another valid vault under the same key. */
	char other[160];
	snprintf(other, sizeof(other), "%s/other", dir);
	unlink(other);
	assert_int_equal(vault_create(other, c, NULL, err, sizeof(err)), 0);
	size_t olen;
	unsigned char *o = read_file(other, &olen);
	memcpy(f, o, 48); /* its magic, kdf, salt and nonce; our length and body */
	assert_int_equal(open_copy(f, len, c), -EBADMSG);
	free(o);
	free(f);
	vault_cred_free(c);
}

static void test_names(void **state)
{
	(void)state;
	static const char *good[] = { "a",
				      "GITHUB_TOKEN",
				      "api.example.com",
				      "x-1_2.3",
				      "_",
				      "0123456789012345678901234567890123456789012345678901234567"
				      "890123" };
	static const char *bad[] = {
		"",	".",
		"..",	".hidden",
		"-opt", "a/b",
		"a b",	"a\nb",
		"ä",	"a=b",
		"a:b",	"01234567890123456789012345678901234567890123456789012345678901234",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!vault_name_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (vault_name_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);

	make_vault();
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	struct vault *v;
	assert_int_equal(vault_open(vpath, c, VAULT_RDWR, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_put(v, "../x", (const unsigned char *)"v", 1, err, sizeof(err)),
			 -EINVAL);
	assert_null(strstr(err, "../x")); /* a name is not echoed */
	assert_int_equal(vault_put(v, "empty", (const unsigned char *)"", 0, err, sizeof(err)),
			 -EINVAL);
	unsigned char *big = calloc(1, VAULT_VALUE_MAX + 1);
	assert_int_equal(vault_put(v, "big", big, VAULT_VALUE_MAX + 1, err, sizeof(err)), -EINVAL);
	assert_int_equal(vault_put(v, "big", big, VAULT_VALUE_MAX, err, sizeof(err)), 0);
	free(big);
	assert_int_equal(vault_count(v), 3);
	vault_close(v);
	vault_cred_free(c);
}

static void test_key_file_rules(void **state)
{
	(void)state;
	struct vault_cred *c = NULL;
	char p[160];
	snprintf(p, sizeof(p), "%s/loose", dir);
	size_t len;
	unsigned char *k = read_file(key1, &len);
	write_file(p, k, len, 0644);
	assert_int_equal(vault_cred_load(VAULT_CRED_KEY_FILE, p, &c, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "chmod 600"));
	write_file(p, k, len, 0640);
	assert_int_equal(vault_cred_load(VAULT_CRED_KEY_FILE, p, &c, err, sizeof(err)), -EACCES);
	write_file(p, "correct horse\n", 14, 0604);
	assert_int_equal(vault_cred_load(VAULT_CRED_PASSPHRASE, p, &c, err, sizeof(err)), -EACCES);
	write_file(p, k, 63, 0600); /* one hex digit short */
	assert_int_equal(vault_cred_load(VAULT_CRED_KEY_FILE, p, &c, err, sizeof(err)), -EINVAL);
	k[5] = 'g';
	write_file(p, k, len, 0600);
	assert_int_equal(vault_cred_load(VAULT_CRED_KEY_FILE, p, &c, err, sizeof(err)), -EINVAL);
	write_file(p, "\n", 1, 0600);
	assert_int_equal(vault_cred_load(VAULT_CRED_PASSPHRASE, p, &c, err, sizeof(err)), -EINVAL);
	snprintf(p, sizeof(p), "%s/nonexistent", dir);
	assert_int_equal(vault_cred_load(VAULT_CRED_KEY_FILE, p, &c, err, sizeof(err)), -ENOENT);
	/* A new key file is never written over an existing one. */
	assert_int_equal(vault_key_file_create(key1, err, sizeof(err)), -EEXIST);
	free(k);
}

static void test_rotate_key(void **state)
{
	(void)state;
	make_vault();
	struct vault_cred *k1 = cred(VAULT_CRED_KEY_FILE, key1);
	struct vault_cred *k2 = cred(VAULT_CRED_KEY_FILE, key2);
	struct vault_cred *p1 = cred(VAULT_CRED_PASSPHRASE, pass1);
	struct vault *v;
	size_t l1, l2;
	unsigned char *before = read_file(vpath, &l1);

	assert_int_equal(vault_open(vpath, k1, VAULT_RDWR, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_rekey(v, k2, NULL, err, sizeof(err)), 0);
	/* The handle keeps working under the new key. */
	assert_int_equal(
		vault_put(v, "after", (const unsigned char *)"rotation", 8, err, sizeof(err)), 0);
	vault_close(v);
	unsigned char *after = read_file(vpath, &l2);
	assert_memory_not_equal(before + 20, after + 20, 16); /* new salt */
	free(before);
	free(after);
	assert_int_equal(vault_open(vpath, k1, VAULT_RDONLY, &v, err, sizeof(err)), -EBADMSG);
	assert_int_equal(vault_open(vpath, k2, VAULT_RDWR, &v, err, sizeof(err)), 0);
	check_value(v, "GITHUB_TOKEN", "ghp_abc123");
	check_value(v, "after", "rotation");

	/* Key file -> passphrase. */
	assert_int_equal(vault_rekey(v, p1, &fast_kdf, err, sizeof(err)), 0);
	vault_close(v);
	assert_int_equal(vault_open(vpath, k2, VAULT_RDONLY, &v, err, sizeof(err)), -EINVAL);
	assert_int_equal(vault_open(vpath, p1, VAULT_RDONLY, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_count(v), 3);
	check_value(v, "api.key", "k-XYZ");
	vault_close(v);
	vault_cred_free(k1);
	vault_cred_free(k2);
	vault_cred_free(p1);
}

static size_t count_dir_entries(void)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n++;
	closedir(d);
	return n;
}

/* A write that fails half way (file size limit: EFBIG) leaves the old vault and no temp. */
static void test_failed_write_keeps_old_vault(void **state)
{
	(void)state;
	make_vault();
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	struct vault *v;
	size_t l1, l2, ents = count_dir_entries();
	unsigned char *before = read_file(vpath, &l1);
	assert_int_equal(vault_open(vpath, c, VAULT_RDWR, &v, err, sizeof(err)), 0);

	struct rlimit old, lim = { .rlim_cur = 4096, .rlim_max = RLIM_INFINITY };
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	unsigned char big[8192];
	memset(big, 'x', sizeof(big));
	int rc = vault_put(v, "big", big, sizeof(big), err, sizeof(err));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, -EFBIG);
	assert_non_null(strstr(err, "left as it was"));

	/* The handle still holds the old content and can write again. */
	assert_int_equal(vault_count(v), 2);
	vault_close(v);
	unsigned char *after = read_file(vpath, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(before, after, l1);
	assert_int_equal(count_dir_entries(), ents);
	free(before);
	free(after);
	vault_cred_free(c);
}

/* A writer killed before its rename leaves '.vault.XXXXXX'; the next writer removes it,
 * and nothing else. */
static void test_stale_temp_removed(void **state)
{
	(void)state;
	make_vault();
	char stale[160], other[160];
	snprintf(stale, sizeof(stale), "%s/.vault.AbC123", dir);
	snprintf(other, sizeof(other), "%s/.vaultx.AbC123", dir);
	write_file(stale, "x", 1, 0600);
	write_file(other, "x", 1, 0600);
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	struct vault *v;
	assert_int_equal(vault_open(vpath, c, VAULT_RDONLY, &v, err, sizeof(err)), 0);
	vault_close(v);
	assert_int_equal(access(stale, F_OK), 0); /* readers take no lock and touch nothing */
	assert_int_equal(vault_open(vpath, c, VAULT_RDWR, &v, err, sizeof(err)), 0);
	vault_close(v);
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(other, F_OK), 0);
	unlink(other);
	vault_cred_free(c);
}

static void test_secret_memory(void **state)
{
	(void)state;
	unsigned char *p = vault_secret_alloc(100);
	assert_non_null(p);
	memset(p, 0xaa, 100);
	vault_secret_free(p, 100);
	vault_secret_free(NULL, 0);
}

/* Seals PLAIN under key1 into vpath with format version VER, as an older or hand-made file. */
static void seal_by_hand(unsigned ver, const unsigned char *plain, size_t n)
{
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	unsigned char f[VAULT_HDR_LEN + 256 + VAULT_TAG_LEN], key[32];

	assert_true(n <= 256);
	assert_int_equal(vault_new_header(f, c, NULL), 0);
	vault_put_be(f + 8, ver, 2);
	vault_put_be(f + 48, n, 8);
	assert_int_equal(vault_derive_key(f, c, key, vpath, err, sizeof(err)), 0);
	assert_int_equal(
		vault_gcm(true, key, f, plain, n, f + VAULT_HDR_LEN, f + VAULT_HDR_LEN + n), 0);
	unlink(vpath);
	write_file(vpath, f, VAULT_HDR_LEN + n + VAULT_TAG_LEN, 0600);
	vault_cred_free(c);
}

/* A version 1 file (no kinds) is read, its entries static, and the next write makes version 2
 * keeping them; a kind round-trips; an unknown kind byte is refused. */
static void test_versions_and_kinds(void **state)
{
	/* count 1; "OLD"; created 1; updated 2; value "v1-value" */
	static const unsigned char v1[] = { 0, 0, 0, 1, 3,   'O', 'L', 'D', 0,	 0,   0,   0,
					    0, 0, 0, 1, 0,   0,	  0,   0,   0,	 0,   0,   2,
					    0, 0, 0, 8, 'v', '1', '-', 'v', 'a', 'l', 'u', 'e' };
	unsigned char v2[sizeof(v1) + 1], *val;
	struct vault_cred *c = cred(VAULT_CRED_KEY_FILE, key1);
	struct vault_entry_info e;
	struct vault *v;
	size_t n, len;

	(void)state;
	seal_by_hand(1, v1, sizeof(v1));
	assert_int_equal(vault_open(vpath, c, VAULT_RDWR, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_get(v, "OLD", &val, &n), 0);
	assert_memory_equal(val, "v1-value", 8);
	vault_secret_free(val, n);
	assert_int_equal(vault_kind(v, "OLD"), VAULT_KIND_STATIC);
	assert_int_equal(vault_put_kind(v, "TOK", VAULT_KIND_OAUTH2_REFRESH,
					(const unsigned char *)"{}", 2, err, sizeof(err)),
			 0);
	assert_int_equal(vault_put_kind(v, "BAD", (enum vault_kind)99, (const unsigned char *)"{}",
					2, err, sizeof(err)),
			 -EINVAL);
	vault_close(v);
	unsigned char *f = read_file(vpath, &len);
	assert_int_equal(vault_get_be(f + 8, 2), 2);
	free(f);
	assert_int_equal(vault_open(vpath, c, VAULT_RDONLY, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_kind(v, "OLD"), VAULT_KIND_STATIC);
	assert_int_equal(vault_kind(v, "TOK"), VAULT_KIND_OAUTH2_REFRESH);
	assert_int_equal(vault_entry(v, 1, &e), 0);
	assert_string_equal(e.name, "TOK");
	assert_int_equal(e.kind, VAULT_KIND_OAUTH2_REFRESH);
	assert_int_equal(vault_get(v, "OLD", &val, &n), 0);
	assert_memory_equal(val, "v1-value", 8);
	vault_secret_free(val, n);
	vault_close(v);

	/* The same entry as version 2 with a kind this version does not know. */
	memcpy(v2, v1, 8);
	v2[8] = 99;
	memcpy(v2 + 9, v1 + 8, sizeof(v1) - 8);
	seal_by_hand(2, v2, sizeof(v2));
	assert_int_equal(vault_open(vpath, c, VAULT_RDONLY, &v, err, sizeof(err)), -EPROTO);
	v2[8] = VAULT_KIND_OAUTH2_CLIENT;
	seal_by_hand(2, v2, sizeof(v2));
	assert_int_equal(vault_open(vpath, c, VAULT_RDONLY, &v, err, sizeof(err)), 0);
	assert_int_equal(vault_kind(v, "OLD"), VAULT_KIND_OAUTH2_CLIENT);
	vault_close(v);
	vault_cred_free(c);
}

/* Retired values: a new one changes the generation connections follow (they take it at their
 * next read); one kept already does not, or every connection would start its scrubber again at
 * every request that retires it (an AWS key's parts do, each time they are read). */
static void test_live_retired(void **state)
{
	struct vault_live *l;
	unsigned g, serial;
	uint8_t *val;
	size_t len;

	(void)state;
	make_vault();
	assert_int_equal(vault_live_open(vpath, key1, &l, err, sizeof(err)), 0);
	g = vault_live_current(l);
	vault_live_retire(l, "GITHUB_TOKEN", (const uint8_t *)"old-value-1", 11, INT64_MAX);
	assert_int_not_equal(vault_live_current(l), g);
	g = vault_live_current(l);
	vault_live_retire(l, "GITHUB_TOKEN", (const uint8_t *)"old-value-1", 11, INT64_MAX);
	assert_int_equal(vault_live_current(l), g);
	assert_int_equal(vault_live_retired(l, "GITHUB_TOKEN", 0, &serial, &val, &len), 0);
	assert_memory_equal(val, "old-value-1", 11);
	free(val);
	assert_int_equal(vault_live_retired(l, "GITHUB_TOKEN", serial, &serial, &val, &len),
			 -ENOENT);
	vault_live_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_nonce_fresh_per_write),
		cmocka_unit_test(test_wrong_key_refused),
		cmocka_unit_test(test_every_byte_flip_refused),
		cmocka_unit_test(test_every_truncation_refused),
		cmocka_unit_test(test_header_tampering_refused),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_key_file_rules),
		cmocka_unit_test(test_rotate_key),
		cmocka_unit_test(test_failed_write_keeps_old_vault),
		cmocka_unit_test(test_stale_temp_removed),
		cmocka_unit_test(test_secret_memory),
		cmocka_unit_test(test_versions_and_kinds),
		cmocka_unit_test(test_live_retired),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
