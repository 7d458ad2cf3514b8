/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_crypto.c: the vault's keys and ciphers — key files and passphrase files read
 * into locked memory, new key files, the AES key derived from either (HKDF or scrypt), and
 * AES-256-GCM over the contents with the header as additional data. */
#include "broker/vault_internal.h"
#include "lib/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#define PASS_MAX 1024 /* a passphrase file; a key file is far shorter */

const char *vault_ossl_err(void)
{
	static char buf[160];
	unsigned long e = ERR_get_error();
	if (!e)
		return "unknown OpenSSL error";
	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return buf;
}

static int open_private(const char *path, const char *what, char *err, size_t errlen)
{
	/* O_NONBLOCK: a FIFO in the file's place is refused below, never waited on. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		errbuf_set(err, errlen, "cannot open %s %s: %s", what, path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		errbuf_set(err, errlen, "%s %s is not a regular file", what, path);
		close(fd);
		return -EINVAL;
	}
	if ((st.st_mode & 077) || st.st_uid != geteuid()) {
		errbuf_set(err, errlen,
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
		errbuf_set(err, errlen, "out of memory reading %s %s", what, path);
		goto fail;
	}
	c->kind = kind;
	ssize_t n = vault_read_small(fd, raw, PASS_MAX);
	if (n < 0) {
		rc = (int)n;
		errbuf_set(err, errlen, "cannot read %s %s: %s", what, path,
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
			errbuf_set(err, errlen,
				   "key file %s must hold 64 hex digits (32 random bytes); "
				   "make one with 'bulkhead vault init --key-file %s'",
				   path, path);
			goto fail;
		}
		c->len = KEY_LEN;
	} else {
		if (len == 0) {
			errbuf_set(err, errlen, "passphrase file %s is empty", path);
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

int vault_key_file_create(const char *path, char *err, size_t errlen)
{
	unsigned char *key = vault_secret_alloc(KEY_LEN);
	char *hex = (char *)vault_secret_alloc(2 * KEY_LEN + 2);
	size_t hlen = 0;
	int rc = -EIO, fd = -1;
	if (!key || !hex) {
		rc = -ENOMEM;
		errbuf_set(err, errlen, "out of memory creating key file %s", path);
		goto out;
	}
	if (RAND_bytes(key, KEY_LEN) != 1 ||
	    !OPENSSL_buf2hexstr_ex(hex, 2 * KEY_LEN + 1, &hlen, key, KEY_LEN, '\0')) {
		errbuf_set(err, errlen, "cannot make a random key for %s: %s", path,
			   vault_ossl_err());
		goto out;
	}
	hex[2 * KEY_LEN] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "cannot create key file %s: %s", path, strerror(-rc));
		goto out;
	}
	rc = io_write_full(fd, hex, 2 * KEY_LEN + 1);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0)
		rc = vault_fsync_dir(path);
	if (rc < 0) {
		unlink(path);
		errbuf_set(err, errlen, "cannot write key file %s: %s", path, strerror(-rc));
	}
out:
	vault_secret_free(key, KEY_LEN);
	vault_secret_free((unsigned char *)hex, 2 * KEY_LEN + 2);
	return rc;
}

/* The AES key for header hdr and credential c. A key file goes through HKDF (salted, so
 * each key rotation gives an unrelated AES key); a passphrase through scrypt with the
 * header's cost. */
int vault_derive_key(const unsigned char *hdr, const struct vault_cred *c, unsigned char *key,
		     const char *path, char *err, size_t errlen)
{
	int kdf = hdr[10];
	if ((kdf == KDF_KEY_FILE) != (c->kind == VAULT_CRED_KEY_FILE)) {
		errbuf_set(err, errlen, "vault %s is locked with a %s; give that instead", path,
			   kdf == KDF_KEY_FILE ? "key file (--key-file)"
					       : "passphrase (--passphrase-file)");
		return -EINVAL;
	}
	EVP_KDF *k = EVP_KDF_fetch(NULL, kdf == KDF_KEY_FILE ? "HKDF" : "SCRYPT", NULL);
	EVP_KDF_CTX *ctx = k ? EVP_KDF_CTX_new(k) : NULL;
	OSSL_PARAM params[7], *p = params;
	uint64_t n = 1ULL << hdr[11];
	uint32_t r = (uint32_t)vault_get_be(hdr + 12, 4), pp = (uint32_t)vault_get_be(hdr + 16, 4);
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
		errbuf_set(err, errlen, "key derivation for vault %s failed: %s", path,
			   vault_ossl_err());
		return -EIO;
	}
	return 0;
}

/* AES-256-GCM over in with the header as AAD; out gets in_len bytes, tag 16. */
int vault_gcm(bool enc, const unsigned char *key, const unsigned char *hdr, const unsigned char *in,
	      size_t in_len, unsigned char *out, unsigned char *tag)
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
