/* broker/vault.c: the encrypted secret vault (format in vault.h). Plaintext lives only in
 * locked, non-dumpable pages that are wiped before release; the file is only ever replaced
 * whole, by rename, after its successor is on disk. */
#include "broker/vault.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#define KEY_LEN	     32
#define SALT_LEN     16
#define NONCE_LEN    12
#define KDF_KEY_FILE 1
#define KDF_SCRYPT   2
#define PASS_MAX     1024
#define FILE_MAX     (VAULT_HDR_LEN + VAULT_PLAIN_MAX + VAULT_TAG_LEN)
/* Bounds on header parameters, checked before running scrypt: a vault file must not be
 * able to make us allocate gigabytes or spin for minutes. */
#define SCRYPT_LOG2N_MAX 22
#define SCRYPT_R_MAX	 32
#define SCRYPT_P_MAX	 16
#define SCRYPT_MEM_MAX	 (1024ULL * 1024 * 1024)

const struct vault_kdf vault_kdf_default = { .log2_n = 17, .r = 8, .p = 1 };

struct vault_cred {
	enum vault_cred_kind kind;
	unsigned char *buf; /* locked: the 32-byte key, or the passphrase */
	size_t len;
};

struct entry {
	char name[VAULT_NAME_MAX + 1];
	size_t off, len; /* the value, inside vault.plain */
	int64_t created, updated;
};

struct vault {
	char path[PATH_MAX];
	int lock_fd; /* the directory, flock'ed for VAULT_RDWR; else -1 */
	unsigned char hdr[VAULT_HDR_LEN];
	unsigned char *key; /* locked, KEY_LEN */
	unsigned char *plain;
	size_t plain_len;
	struct entry *ents;
	size_t n;
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const char *ossl_err(void)
{
	static char buf[160];
	unsigned long e = ERR_get_error();
	if (!e)
		return "unknown OpenSSL error";
	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return buf;
}

/* ---- locked memory ------------------------------------------------------------------ */

static size_t page_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return len ? (len + pg - 1) / pg * pg : pg;
}

unsigned char *vault_secret_alloc(size_t len)
{
	size_t sz = page_round(len);
	void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Best effort: mlock can fail under a low RLIMIT_MEMLOCK; the pages are still kept out
	 * of core dumps and children, and wiped on release. */
	(void)mlock(p, sz);
	(void)madvise(p, sz, MADV_DONTDUMP);
	(void)madvise(p, sz, MADV_WIPEONFORK);
	return p;
}

void vault_secret_free(unsigned char *buf, size_t len)
{
	if (!buf)
		return;
	size_t sz = page_round(len);
	OPENSSL_cleanse(buf, sz);
	munlock(buf, sz);
	munmap(buf, sz);
}

/* ---- small helpers ------------------------------------------------------------------ */

static void put_be(unsigned char *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

bool vault_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > VAULT_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/* Splits path into its directory (for the temp file, the lock and the fsync). */
static int path_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	int n;
	if (!slash)
		n = snprintf(dir, len, ".");
	else if (slash == path)
		n = snprintf(dir, len, "/");
	else
		n = snprintf(dir, len, "%.*s", (int)(slash - path), path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Reads a whole regular file of at most max bytes into buf (which the caller provides,
 * so secrets can land in locked memory). Returns the length or a negative errno. */
static ssize_t read_small(int fd, unsigned char *buf, size_t max)
{
	size_t got = 0;
	for (;;) {
		ssize_t r = read(fd, buf + got, max - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return (ssize_t)got;
		got += (size_t)r;
		if (got == max) {
			/* One more byte means the file is over the limit. */
			unsigned char extra;
			ssize_t e = read(fd, &extra, 1);
			return e == 0 ? (ssize_t)got : -EFBIG;
		}
	}
}

/* ---- credentials -------------------------------------------------------------------- */

static int open_private(const char *path, const char *what, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;
		seterr(err, errlen, "cannot open %s %s: %s", what, path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		seterr(err, errlen, "%s %s is not a regular file", what, path);
		close(fd);
		return -EINVAL;
	}
	if ((st.st_mode & 077) || st.st_uid != geteuid()) {
		seterr(err, errlen,
		       "%s %s is readable by others (mode %04o, owner %u); "
		       "make it yours with 'chmod 600 %s'",
		       what, path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, path);
		close(fd);
		return -EACCES;
	}
	return fd;
}

int vault_cred_load(enum vault_cred_kind kind, const char *path, struct vault_cred **out, char *err,
		    size_t errlen)
{
	const char *what = kind == VAULT_CRED_KEY_FILE ? "key file" : "passphrase file";
	int fd = open_private(path, what, err, errlen);
	if (fd < 0)
		return fd;
	struct vault_cred *c = calloc(1, sizeof(*c));
	unsigned char *raw = vault_secret_alloc(PASS_MAX + 1);
	int rc = -ENOMEM;
	if (!c || !raw) {
		seterr(err, errlen, "out of memory reading %s %s", what, path);
		goto fail;
	}
	c->kind = kind;
	ssize_t n = read_small(fd, raw, PASS_MAX);
	if (n < 0) {
		rc = (int)n;
		seterr(err, errlen, "cannot read %s %s: %s", what, path,
		       rc == -EFBIG ? "longer than 1024 bytes" : strerror(-rc));
		goto fail;
	}
	size_t len = (size_t)n;
	if (len && raw[len - 1] == '\n')
		len--;
	if (len && raw[len - 1] == '\r')
		len--;
	rc = -EINVAL;
	if (kind == VAULT_CRED_KEY_FILE) {
		size_t klen = 0;
		raw[len] = '\0';
		c->buf = vault_secret_alloc(KEY_LEN);
		if (!c->buf || len != VAULT_KEY_FILE_LEN ||
		    !OPENSSL_hexstr2buf_ex(c->buf, KEY_LEN, &klen, (char *)raw, '\0') ||
		    klen != KEY_LEN) {
			ERR_clear_error();
			seterr(err, errlen,
			       "key file %s must hold 64 hex digits (32 random bytes); "
			       "make one with 'bulkhead vault init --key-file %s'",
			       path, path);
			goto fail;
		}
		c->len = KEY_LEN;
	} else {
		if (len == 0) {
			seterr(err, errlen, "passphrase file %s is empty", path);
			goto fail;
		}
		c->buf = raw;
		c->len = len;
		raw = NULL;
	}
	vault_secret_free(raw, PASS_MAX + 1);
	close(fd);
	*out = c;
	return 0;
fail:
	vault_secret_free(raw, PASS_MAX + 1);
	vault_cred_free(c);
	close(fd);
	return rc;
}

void vault_cred_free(struct vault_cred *c)
{
	if (!c)
		return;
	vault_secret_free(c->buf, c->kind == VAULT_CRED_KEY_FILE ? KEY_LEN : PASS_MAX + 1);
	free(c);
}

static int fsync_dir(const char *path)
{
	char dir[PATH_MAX];
	if (path_dir(path, dir, sizeof(dir)) < 0)
		return -ENAMETOOLONG;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int rc = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	return rc;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int vault_key_file_create(const char *path, char *err, size_t errlen)
{
	unsigned char *key = vault_secret_alloc(KEY_LEN);
	char *hex = (char *)vault_secret_alloc(2 * KEY_LEN + 2);
	size_t hlen = 0;
	int rc = -EIO, fd = -1;
	if (!key || !hex) {
		rc = -ENOMEM;
		seterr(err, errlen, "out of memory creating key file %s", path);
		goto out;
	}
	if (RAND_bytes(key, KEY_LEN) != 1 ||
	    !OPENSSL_buf2hexstr_ex(hex, 2 * KEY_LEN + 1, &hlen, key, KEY_LEN, '\0')) {
		seterr(err, errlen, "cannot make a random key for %s: %s", path, ossl_err());
		goto out;
	}
	hex[2 * KEY_LEN] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		rc = -errno;
		seterr(err, errlen, "cannot create key file %s: %s", path, strerror(-rc));
		goto out;
	}
	rc = write_all(fd, (unsigned char *)hex, 2 * KEY_LEN + 1);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0)
		rc = fsync_dir(path);
	if (rc < 0) {
		unlink(path);
		seterr(err, errlen, "cannot write key file %s: %s", path, strerror(-rc));
	}
out:
	vault_secret_free(key, KEY_LEN);
	vault_secret_free((unsigned char *)hex, 2 * KEY_LEN + 2);
	return rc;
}

/* ---- key derivation and sealing ------------------------------------------------------- */

/* The AES key for header hdr and credential c. A key file goes through HKDF (salted, so
 * each key rotation gives an unrelated AES key); a passphrase through scrypt with the
 * header's cost. */
static int derive_key(const unsigned char *hdr, const struct vault_cred *c, unsigned char *key,
		      const char *path, char *err, size_t errlen)
{
	int kdf = hdr[10];
	if ((kdf == KDF_KEY_FILE) != (c->kind == VAULT_CRED_KEY_FILE)) {
		seterr(err, errlen, "vault %s is locked with a %s; give that instead", path,
		       kdf == KDF_KEY_FILE ? "key file (--key-file)"
					   : "passphrase (--passphrase-file)");
		return -EINVAL;
	}
	EVP_KDF *k = EVP_KDF_fetch(NULL, kdf == KDF_KEY_FILE ? "HKDF" : "SCRYPT", NULL);
	EVP_KDF_CTX *ctx = k ? EVP_KDF_CTX_new(k) : NULL;
	OSSL_PARAM params[7], *p = params;
	uint64_t n = 1ULL << hdr[11];
	uint32_t r = (uint32_t)get_be(hdr + 12, 4), pp = (uint32_t)get_be(hdr + 16, 4);
	uint64_t maxmem = SCRYPT_MEM_MAX + (1 << 20);
	static char info[] = "bulkhead vault v1 key file";
	static char digest[] = "SHA256";
	if (kdf == KDF_KEY_FILE) {
		*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, c->buf, c->len);
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info,
							 sizeof(info) - 1);
	} else {
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PASSWORD, c->buf, c->len);
		*p++ = OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_N, &n);
		*p++ = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_R, &r);
		*p++ = OSSL_PARAM_construct_uint32(OSSL_KDF_PARAM_SCRYPT_P, &pp);
		*p++ = OSSL_PARAM_construct_uint64(OSSL_KDF_PARAM_SCRYPT_MAXMEM, &maxmem);
	}
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)(hdr + 20), SALT_LEN);
	*p = OSSL_PARAM_construct_end();
	int ok = ctx && EVP_KDF_derive(ctx, key, KEY_LEN, params) == 1;
	EVP_KDF_CTX_free(ctx); /* wipes its copy of the password */
	EVP_KDF_free(k);
	if (!ok) {
		seterr(err, errlen, "key derivation for vault %s failed: %s", path, ossl_err());
		return -EIO;
	}
	return 0;
}

/* AES-256-GCM over in with the header as AAD; out gets in_len bytes, tag 16. */
static int gcm(bool enc, const unsigned char *key, const unsigned char *hdr,
	       const unsigned char *in, size_t in_len, unsigned char *out, unsigned char *tag)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int ok = 0, l1 = 0, l2 = 0;
	if (!c || in_len > INT_MAX)
		goto out;
	if (EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) != 1 ||
	    EVP_CipherInit_ex(c, NULL, NULL, key, hdr + 36, enc) != 1 ||
	    EVP_CipherUpdate(c, NULL, &l1, hdr, VAULT_HDR_LEN) != 1 ||
	    EVP_CipherUpdate(c, out, &l1, in, (int)in_len) != 1)
		goto out;
	if (!enc && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, VAULT_TAG_LEN, tag) != 1)
		goto out;
	if (EVP_CipherFinal_ex(c, out + l1, &l2) != 1)
		goto out;
	if (enc && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, VAULT_TAG_LEN, tag) != 1)
		goto out;
	ok = (size_t)(l1 + l2) == in_len;
out:
	EVP_CIPHER_CTX_free(c);
	ERR_clear_error();
	return ok ? 0 : -EBADMSG;
}

/* Checks a header before anything is derived from it. */
static int check_header(const unsigned char *h, size_t file_len, const char *path, char *err,
			size_t errlen)
{
	if (file_len < VAULT_HDR_LEN + VAULT_TAG_LEN ||
	    memcmp(h, VAULT_MAGIC, sizeof(VAULT_MAGIC)) != 0) {
		seterr(err, errlen,
		       "%s is not a bulkhead vault, or is truncated (%zu bytes); "
		       "restore it from a backup",
		       path, file_len);
		return file_len < VAULT_HDR_LEN + VAULT_TAG_LEN ? -EBADMSG : -EPROTO;
	}
	unsigned ver = (unsigned)get_be(h + 8, 2);
	if (ver != VAULT_VERSION) {
		seterr(err, errlen, "vault %s has format version %u; this bulkhead reads %d", path,
		       ver, VAULT_VERSION);
		return -EPROTO;
	}
	unsigned kdf = h[10], log2n = h[11];
	uint64_t r = get_be(h + 12, 4), p = get_be(h + 16, 4);
	bool ok;
	if (kdf == KDF_KEY_FILE)
		ok = log2n == 0 && r == 0 && p == 0;
	else
		ok = kdf == KDF_SCRYPT && log2n >= 1 && log2n <= SCRYPT_LOG2N_MAX && r >= 1 &&
		     r <= SCRYPT_R_MAX && p >= 1 && p <= SCRYPT_P_MAX &&
		     128 * r * (1ULL << log2n) <= SCRYPT_MEM_MAX;
	if (!ok) {
		seterr(err, errlen,
		       "vault %s has an unknown or out-of-range key derivation in its header; "
		       "restore it from a backup",
		       path);
		return -EPROTO;
	}
	if (get_be(h + 48, 8) != file_len - VAULT_HDR_LEN - VAULT_TAG_LEN) {
		seterr(err, errlen,
		       "vault %s is truncated or extended (length field does not match its "
		       "%zu bytes); restore it from a backup",
		       path, file_len);
		return -EBADMSG;
	}
	return 0;
}

/* ---- plaintext ---------------------------------------------------------------------- */

/* Indexes v->plain into v->ents; the plaintext is authenticated, but is still parsed with
 * every length checked and must be canonical (sorted, unique, valid names, no slack). */
static int parse_plain(struct vault *v)
{
	const unsigned char *p = v->plain, *end = v->plain + v->plain_len;
	if (end - p < 4)
		return -EPROTO;
	uint64_t n = get_be(p, 4);
	p += 4;
	if (n > VAULT_ENTRIES_MAX)
		return -EPROTO;
	struct entry *e = n ? calloc(n, sizeof(*e)) : NULL;
	if (n && !e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (end - p < 1 || end - p < 1 + p[0] + 8 + 8 + 4)
			goto bad;
		size_t nl = p[0];
		if (nl == 0 || nl > VAULT_NAME_MAX)
			goto bad;
		memcpy(e[i].name, p + 1, nl);
		e[i].name[nl] = '\0';
		if (strlen(e[i].name) != nl || !vault_name_valid(e[i].name) ||
		    (i > 0 && strcmp(e[i - 1].name, e[i].name) >= 0))
			goto bad;
		p += 1 + nl;
		e[i].created = (int64_t)get_be(p, 8);
		e[i].updated = (int64_t)get_be(p + 8, 8);
		size_t vl = (size_t)get_be(p + 16, 4);
		p += 20;
		if (vl > VAULT_VALUE_MAX || (size_t)(end - p) < vl)
			goto bad;
		e[i].off = (size_t)(p - v->plain);
		e[i].len = vl;
		p += vl;
	}
	if (p != end)
		goto bad;
	free(v->ents);
	v->ents = e;
	v->n = n;
	return 0;
bad:
	free(e);
	return -EPROTO;
}

static size_t entry_size(size_t name_len, size_t val_len)
{
	return 1 + name_len + 8 + 8 + 4 + val_len;
}

static unsigned char *emit(unsigned char *p, const char *name, int64_t created, int64_t updated,
			   const unsigned char *val, size_t len)
{
	size_t nl = strlen(name);
	*p++ = (unsigned char)nl;
	memcpy(p, name, nl);
	p += nl;
	put_be(p, (uint64_t)created, 8);
	put_be(p + 8, (uint64_t)updated, 8);
	put_be(p + 16, len, 4);
	p += 20;
	memcpy(p, val, len);
	return p + len;
}

/* Builds the next plaintext in fresh locked memory: v's entries with name set to val
 * (val NULL: name removed). */
static int build_plain(const struct vault *v, const char *name, const unsigned char *val,
		       size_t len, unsigned char **out, size_t *out_len)
{
	size_t total = 4, count = 0;
	bool done = false;
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->ents[i].name, name) != 0) {
			total += entry_size(strlen(v->ents[i].name), v->ents[i].len);
			count++;
		}
	if (val) {
		total += entry_size(strlen(name), len);
		count++;
	}
	if (total > VAULT_PLAIN_MAX || count > VAULT_ENTRIES_MAX)
		return -EFBIG;
	unsigned char *buf = vault_secret_alloc(total), *p = buf;
	if (!buf)
		return -ENOMEM;
	int64_t now = (int64_t)time(NULL), created = now;
	put_be(p, count, 4);
	p += 4;
	for (size_t i = 0; i <= v->n; i++) {
		const struct entry *e = i < v->n ? &v->ents[i] : NULL;
		int cmp = e ? strcmp(e->name, name) : 1;
		if (cmp == 0)
			created = e->created;
		if (cmp >= 0 && val && !done) {
			p = emit(p, name, created, now, val, len);
			done = true;
		}
		if (e && cmp != 0)
			p = emit(p, e->name, e->created, e->updated, v->plain + e->off, e->len);
	}
	*out = buf;
	*out_len = total;
	return 0;
}

/* ---- files -------------------------------------------------------------------------- */

/* Writes data to a temp file beside path and renames it over path (or, with noreplace,
 * into a free name only). Any failure before the rename leaves path as it was; *renamed
 * says whether path now holds data (even if the directory fsync then failed). */
static int write_atomic(const char *path, const unsigned char *data, size_t len, bool noreplace,
			bool *renamed, char *err, size_t errlen)
{
	*renamed = false;
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (path_dir(path, dir, sizeof(dir)) < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, base) >= (int)sizeof(tmp)) {
		seterr(err, errlen, "vault path %s is too long", path);
		return -ENAMETOOLONG;
	}
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		seterr(err, errlen,
		       "cannot create a temp file in %s: %s; check that it is writable", dir,
		       strerror(e));
		return -e;
	}
	const char *step = "write";
	int rc = fchmod(fd, 0600) < 0 ? -errno : write_all(fd, data, len);
	if (rc == 0 && fsync(fd) < 0) {
		step = "fsync";
		rc = -errno;
	}
	if (close(fd) < 0 && rc == 0) {
		step = "close";
		rc = -errno;
	}
	if (rc == 0) {
		step = "rename";
		if (noreplace)
			rc = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0 ? -errno
											    : 0;
		else
			rc = rename(tmp, path) < 0 ? -errno : 0;
	}
	if (rc < 0) {
		unlink(tmp);
		seterr(err, errlen, "cannot %s %s (vault %s left as it was): %s", step, tmp, path,
		       strerror(-rc));
		return rc;
	}
	*renamed = true;
	rc = fsync_dir(path);
	if (rc < 0)
		seterr(err, errlen,
		       "vault %s was replaced but fsync of its directory failed: %s; "
		       "the change may not survive a power loss",
		       path, strerror(-rc));
	return rc;
}

/* Seals plain under key with header template hdr (kdf and salt filled in), a fresh nonce,
 * and replaces the file. On success hdr holds the header now on disk. */
static int seal_and_write(const char *path, unsigned char *hdr, const unsigned char *key,
			  const unsigned char *plain, size_t plain_len, bool noreplace,
			  bool *renamed, char *err, size_t errlen)
{
	*renamed = false;
	size_t flen = VAULT_HDR_LEN + plain_len + VAULT_TAG_LEN;
	unsigned char *f = malloc(flen);
	if (!f) {
		seterr(err, errlen, "out of memory writing vault %s", path);
		return -ENOMEM;
	}
	memcpy(f, hdr, VAULT_HDR_LEN);
	put_be(f + 48, plain_len, 8);
	if (RAND_bytes(f + 36, NONCE_LEN) != 1 ||
	    gcm(true, key, f, plain, plain_len, f + VAULT_HDR_LEN, f + VAULT_HDR_LEN + plain_len) <
		    0) {
		seterr(err, errlen, "cannot encrypt vault %s: %s", path, ossl_err());
		free(f);
		return -EIO;
	}
	int rc = write_atomic(path, f, flen, noreplace, renamed, err, errlen);
	if (*renamed)
		memcpy(hdr, f, VAULT_HDR_LEN);
	free(f);
	return rc;
}

/* A header for a new key: magic, version, kdf, a random salt. */
static int new_header(unsigned char *h, const struct vault_cred *c, const struct vault_kdf *kdf)
{
	memset(h, 0, VAULT_HDR_LEN);
	memcpy(h, VAULT_MAGIC, sizeof(VAULT_MAGIC));
	put_be(h + 8, VAULT_VERSION, 2);
	if (c->kind == VAULT_CRED_KEY_FILE) {
		h[10] = KDF_KEY_FILE;
	} else {
		if (!kdf)
			kdf = &vault_kdf_default;
		h[10] = KDF_SCRYPT;
		h[11] = kdf->log2_n;
		put_be(h + 12, kdf->r, 4);
		put_be(h + 16, kdf->p, 4);
	}
	return RAND_bytes(h + 20, SALT_LEN) == 1 ? 0 : -EIO;
}

/* Temp files of writers that were killed before their rename ('.<base>.XXXXXX'). Called
 * with the directory locked, so no live writer owns one. */
static void remove_stale_temps(int dfd, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t bl = strlen(base);
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] == '.' && strncmp(e->d_name + 1, base, bl) == 0 &&
		    e->d_name[bl + 1] == '.' && strlen(e->d_name + bl + 2) == 6)
			unlinkat(dfd, e->d_name, 0);
	closedir(d);
}

static int lock_dir(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	if (path_dir(path, dir, sizeof(dir)) < 0) {
		seterr(err, errlen, "vault path %s is too long", path);
		return -ENAMETOOLONG;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		seterr(err, errlen, "cannot open the vault's directory %s: %s", dir, strerror(e));
		return -e;
	}
	while (flock(fd, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		seterr(err, errlen, "cannot lock %s: %s", dir, strerror(e));
		close(fd);
		return -e;
	}
	remove_stale_temps(fd, path);
	return fd;
}

int vault_create(const char *path, const struct vault_cred *cred, const struct vault_kdf *kdf,
		 char *err, size_t errlen)
{
	unsigned char hdr[VAULT_HDR_LEN], plain[4] = { 0 };
	unsigned char *key = vault_secret_alloc(KEY_LEN);
	int rc = -ENOMEM, lfd = -1;
	struct stat st;
	if (!key) {
		seterr(err, errlen, "out of memory creating vault %s", path);
		goto out;
	}
	if (strlen(path) >= PATH_MAX) {
		rc = -ENAMETOOLONG;
		seterr(err, errlen, "vault path is too long");
		goto out;
	}
	lfd = rc = lock_dir(path, err, errlen);
	if (rc < 0)
		goto out;
	if (lstat(path, &st) == 0) {
		rc = -EEXIST;
		seterr(err, errlen, "%s already exists; remove it first to start a new vault",
		       path);
		goto out;
	}
	if (kdf && (kdf->log2_n < 1 || kdf->log2_n > SCRYPT_LOG2N_MAX || kdf->r < 1 ||
		    kdf->r > SCRYPT_R_MAX || kdf->p < 1 || kdf->p > SCRYPT_P_MAX)) {
		rc = -EINVAL;
		seterr(err, errlen, "scrypt parameters out of range");
		goto out;
	}
	rc = new_header(hdr, cred, kdf);
	if (rc == 0)
		rc = derive_key(hdr, cred, key, path, err, errlen);
	bool renamed;
	if (rc == 0)
		rc = seal_and_write(path, hdr, key, plain, sizeof(plain), true, &renamed, err,
				    errlen);
out:
	if (lfd >= 0)
		close(lfd);
	vault_secret_free(key, KEY_LEN);
	return rc;
}

int vault_open(const char *path, const struct vault_cred *cred, int flags, struct vault **out,
	       char *err, size_t errlen)
{
	struct vault *v = calloc(1, sizeof(*v));
	unsigned char *f = NULL;
	int rc = -ENOMEM, fd = -1;
	if (!v) {
		seterr(err, errlen, "out of memory opening vault %s", path);
		return rc;
	}
	v->lock_fd = -1;
	if (snprintf(v->path, sizeof(v->path), "%s", path) >= (int)sizeof(v->path)) {
		rc = -ENAMETOOLONG;
		seterr(err, errlen, "vault path is too long");
		goto fail;
	}
	if (flags & VAULT_RDWR) {
		v->lock_fd = rc = lock_dir(path, err, errlen);
		if (rc < 0)
			goto fail;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		seterr(err, errlen, "cannot open vault %s: %s%s", path, strerror(-rc),
		       rc == -ENOENT ? "; create it with 'bulkhead vault init'" : "");
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > FILE_MAX) {
		rc = -EPROTO;
		seterr(err, errlen, "vault %s is not a regular file of at most %d bytes", path,
		       FILE_MAX);
		goto fail;
	}
	f = malloc((size_t)st.st_size + 1);
	if (!f)
		goto fail;
	ssize_t n = read_small(fd, f, (size_t)st.st_size + 1);
	if (n < 0) {
		rc = (int)n;
		seterr(err, errlen, "cannot read vault %s: %s", path, strerror(-rc));
		goto fail;
	}
	rc = check_header(f, (size_t)n, path, err, errlen);
	if (rc < 0)
		goto fail;
	memcpy(v->hdr, f, VAULT_HDR_LEN);
	v->plain_len = (size_t)n - VAULT_HDR_LEN - VAULT_TAG_LEN;
	v->key = vault_secret_alloc(KEY_LEN);
	v->plain = vault_secret_alloc(v->plain_len);
	if (!v->key || !v->plain) {
		rc = -ENOMEM;
		seterr(err, errlen, "out of memory opening vault %s", path);
		goto fail;
	}
	rc = derive_key(v->hdr, cred, v->key, path, err, errlen);
	if (rc < 0)
		goto fail;
	rc = gcm(false, v->key, v->hdr, f + VAULT_HDR_LEN, v->plain_len, v->plain,
		 f + VAULT_HDR_LEN + v->plain_len);
	if (rc < 0) {
		seterr(err, errlen,
		       "vault %s cannot be decrypted: wrong key or passphrase, or the file was "
		       "changed or truncated; it was not modified",
		       path);
		goto fail;
	}
	rc = parse_plain(v);
	if (rc < 0) {
		seterr(err, errlen, "vault %s decrypts but its contents are malformed", path);
		goto fail;
	}
	free(f);
	close(fd);
	*out = v;
	return 0;
fail:
	free(f);
	if (fd >= 0)
		close(fd);
	vault_close(v);
	return rc;
}

void vault_close(struct vault *v)
{
	if (!v)
		return;
	vault_secret_free(v->key, KEY_LEN);
	vault_secret_free(v->plain, v->plain_len);
	free(v->ents);
	if (v->lock_fd >= 0)
		close(v->lock_fd);
	free(v);
}

size_t vault_count(const struct vault *v)
{
	return v->n;
}

int vault_entry(const struct vault *v, size_t i, struct vault_entry_info *out)
{
	if (i >= v->n)
		return -ENOENT;
	out->name = v->ents[i].name;
	out->size = v->ents[i].len;
	out->created = v->ents[i].created;
	out->updated = v->ents[i].updated;
	return 0;
}

static const struct entry *find(const struct vault *v, const char *name)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->ents[i].name, name) == 0)
			return &v->ents[i];
	return NULL;
}

int vault_get(const struct vault *v, const char *name, unsigned char **buf, size_t *len)
{
	const struct entry *e = find(v, name);
	if (!e)
		return -ENOENT;
	unsigned char *b = vault_secret_alloc(e->len);
	if (!b)
		return -ENOMEM;
	memcpy(b, v->plain + e->off, e->len);
	*buf = b;
	*len = e->len;
	return 0;
}

/* Seals and writes next (locked plaintext) under key/hdr; on success it becomes v's. */
static int commit(struct vault *v, unsigned char *hdr, unsigned char *key, unsigned char *next,
		  size_t next_len, char *err, size_t errlen)
{
	unsigned char *old = v->plain;
	size_t old_len = v->plain_len;
	bool renamed;
	int rc = seal_and_write(v->path, hdr, key, next, next_len, false, &renamed, err, errlen);
	/* A failed directory fsync still means the rename happened: the new content is what
	 * the file holds now, so adopt it once the rename succeeded. */
	if (!renamed) {
		vault_secret_free(next, next_len);
		return rc;
	}
	v->plain = next;
	v->plain_len = next_len;
	if (parse_plain(v) < 0) { /* cannot happen: we built it */
		v->plain = old;
		v->plain_len = old_len;
		vault_secret_free(next, next_len);
		return -EPROTO;
	}
	vault_secret_free(old, old_len);
	memcpy(v->hdr, hdr, VAULT_HDR_LEN);
	if (key != v->key)
		memcpy(v->key, key, KEY_LEN);
	return rc;
}

static int edit(struct vault *v, const char *name, const unsigned char *val, size_t len, char *err,
		size_t errlen)
{
	if (v->lock_fd < 0) {
		seterr(err, errlen, "vault %s was opened read-only", v->path);
		return -EBADF;
	}
	if (!vault_name_valid(name)) {
		/* The name is not echoed: a mistyped command line may hold a value there. */
		seterr(err, errlen,
		       "secret name not allowed: use 1-64 of A-Z a-z 0-9 _ . - "
		       "(not starting with . or -)");
		return -EINVAL;
	}
	if (!val && !find(v, name)) {
		seterr(err, errlen, "vault %s has no secret named %s", v->path, name);
		return -ENOENT;
	}
	if (val && (len == 0 || len > VAULT_VALUE_MAX)) {
		seterr(err, errlen, "a secret value must be 1 to %d bytes", VAULT_VALUE_MAX);
		return -EINVAL;
	}
	unsigned char *next;
	size_t next_len;
	int rc = build_plain(v, name, val, len, &next, &next_len);
	if (rc < 0) {
		seterr(err, errlen, "vault %s would exceed its limits (%d secrets, %d bytes)",
		       v->path, VAULT_ENTRIES_MAX, VAULT_PLAIN_MAX);
		return rc;
	}
	unsigned char hdr[VAULT_HDR_LEN];
	memcpy(hdr, v->hdr, VAULT_HDR_LEN);
	return commit(v, hdr, v->key, next, next_len, err, errlen);
}

int vault_put(struct vault *v, const char *name, const unsigned char *val, size_t len, char *err,
	      size_t errlen)
{
	if (!val) {
		seterr(err, errlen, "no value given");
		return -EINVAL;
	}
	return edit(v, name, val, len, err, errlen);
}

int vault_rm(struct vault *v, const char *name, char *err, size_t errlen)
{
	return edit(v, name, NULL, 0, err, errlen);
}

int vault_rekey(struct vault *v, const struct vault_cred *cred, const struct vault_kdf *kdf,
		char *err, size_t errlen)
{
	if (v->lock_fd < 0) {
		seterr(err, errlen, "vault %s was opened read-only", v->path);
		return -EBADF;
	}
	unsigned char hdr[VAULT_HDR_LEN];
	unsigned char *key = vault_secret_alloc(KEY_LEN);
	unsigned char *next = vault_secret_alloc(v->plain_len);
	int rc = -ENOMEM;
	if (!key || !next) {
		seterr(err, errlen, "out of memory re-keying vault %s", v->path);
		goto out;
	}
	memcpy(next, v->plain, v->plain_len);
	rc = new_header(hdr, cred, kdf);
	if (rc == 0)
		rc = derive_key(hdr, cred, key, v->path, err, errlen);
	if (rc == 0) {
		rc = commit(v, hdr, key, next, v->plain_len, err, errlen);
		next = NULL; /* commit owns it now */
	}
out:
	vault_secret_free(next, v->plain_len);
	vault_secret_free(key, KEY_LEN);
	return rc;
}
