/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault.c: the encrypted secret vault (format in vault.h): opening, reading and
 * editing it. Plaintext lives only in locked, non-dumpable pages that are wiped before
 * release; the file is only ever replaced whole, by rename, after its successor is on disk.
 * The pieces are in vault_mem.c, vault_crypto.c, vault_format.c and vault_file.c. */
#include "broker/vault_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

/* The largest file a vault can be; vault_open reads no more. */
#define FILE_MAX (VAULT_HDR_LEN + VAULT_PLAIN_MAX + VAULT_TAG_LEN)

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
		errbuf_set(err, errlen, "out of memory writing vault %s", path);
		return -ENOMEM;
	}
	memcpy(f, hdr, VAULT_HDR_LEN);
	vault_put_be(f + 48, plain_len, 8);
	if (RAND_bytes(f + 36, NONCE_LEN) != 1 ||
	    vault_gcm(true, key, f, plain, plain_len, f + VAULT_HDR_LEN,
		      f + VAULT_HDR_LEN + plain_len) < 0) {
		errbuf_set(err, errlen, "cannot encrypt vault %s: %s", path, vault_ossl_err());
		free(f);
		return -EIO;
	}
	int rc = vault_write_atomic(path, f, flen, noreplace, renamed, err, errlen);
	if (*renamed)
		memcpy(hdr, f, VAULT_HDR_LEN);
	free(f);
	return rc;
}

int vault_create(const char *path, const struct vault_cred *cred, const struct vault_kdf *kdf,
		 char *err, size_t errlen)
{
	unsigned char hdr[VAULT_HDR_LEN], plain[4] = { 0 };
	unsigned char *key = vault_secret_alloc(KEY_LEN);
	int rc = -ENOMEM, lfd = -1;
	struct stat st;
	if (!key) {
		errbuf_set(err, errlen, "out of memory creating vault %s", path);
		goto out;
	}
	if (strlen(path) >= PATH_MAX) {
		rc = -ENAMETOOLONG;
		errbuf_set(err, errlen, "vault path is too long");
		goto out;
	}
	lfd = rc = vault_lock_dir(path, err, errlen);
	if (rc < 0)
		goto out;
	if (lstat(path, &st) == 0) {
		rc = -EEXIST;
		errbuf_set(err, errlen, "%s already exists; remove it first to start a new vault",
			   path);
		goto out;
	}
	if (kdf && (kdf->log2_n < 1 || kdf->log2_n > SCRYPT_LOG2N_MAX || kdf->r < 1 ||
		    kdf->r > SCRYPT_R_MAX || kdf->p < 1 || kdf->p > SCRYPT_P_MAX)) {
		rc = -EINVAL;
		errbuf_set(err, errlen, "scrypt parameters out of range");
		goto out;
	}
	rc = vault_new_header(hdr, cred, kdf);
	if (rc == 0)
		rc = vault_derive_key(hdr, cred, key, path, err, errlen);
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
		errbuf_set(err, errlen, "out of memory opening vault %s", path);
		return rc;
	}
	v->lock_fd = -1;
	if (snprintf(v->path, sizeof(v->path), "%s", path) >= (int)sizeof(v->path)) {
		rc = -ENAMETOOLONG;
		errbuf_set(err, errlen, "vault path is too long");
		goto fail;
	}
	if (flags & VAULT_RDWR) {
		v->lock_fd = rc = vault_lock_dir(path, err, errlen);
		if (rc < 0)
			goto fail;
	}
	/* O_NONBLOCK: a FIFO put in the vault's place is refused below, never waited on. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		errbuf_set(err, errlen, "cannot open vault %s: %s%s", path, strerror(-rc),
			   rc == -ENOENT ? "; create it with 'bulkhead vault init'" : "");
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > FILE_MAX) {
		rc = -EPROTO;
		errbuf_set(err, errlen, "vault %s is not a regular file of at most %d bytes", path,
			   FILE_MAX);
		goto fail;
	}
	f = malloc((size_t)st.st_size + 1);
	if (!f)
		goto fail;
	ssize_t n = vault_read_small(fd, f, (size_t)st.st_size + 1);
	if (n < 0) {
		rc = (int)n;
		errbuf_set(err, errlen, "cannot read vault %s: %s", path, strerror(-rc));
		goto fail;
	}
	rc = vault_check_header(f, (size_t)n, path, err, errlen);
	if (rc < 0)
		goto fail;
	memcpy(v->hdr, f, VAULT_HDR_LEN);
	v->plain_len = (size_t)n - VAULT_HDR_LEN - VAULT_TAG_LEN;
	v->key = vault_secret_alloc(KEY_LEN);
	v->plain = vault_secret_alloc(v->plain_len);
	if (!v->key || !v->plain) {
		rc = -ENOMEM;
		errbuf_set(err, errlen, "out of memory opening vault %s", path);
		goto fail;
	}
	rc = vault_derive_key(v->hdr, cred, v->key, path, err, errlen);
	if (rc < 0)
		goto fail;
	rc = vault_gcm(false, v->key, v->hdr, f + VAULT_HDR_LEN, v->plain_len, v->plain,
		       f + VAULT_HDR_LEN + v->plain_len);
	if (rc < 0) {
		errbuf_set(err, errlen,
			   "vault %s cannot be decrypted: wrong key or passphrase, or the file was "
			   "changed or truncated; it was not modified",
			   path);
		goto fail;
	}
	rc = vault_parse_plain(v);
	if (rc < 0) {
		errbuf_set(err, errlen, "vault %s decrypts but its contents are malformed", path);
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
	out->kind = v->ents[i].kind;
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

int vault_kind(const struct vault *v, const char *name)
{
	const struct entry *e = find(v, name);

	return e ? (int)e->kind : -ENOENT;
}

/* Seals and writes next (locked plaintext, version 2) under key/hdr; on success it becomes v's. */
static int commit(struct vault *v, unsigned char *hdr, unsigned char *key, unsigned char *next,
		  size_t next_len, char *err, size_t errlen)
{
	unsigned char *old = v->plain, old_hdr[VAULT_HDR_LEN];
	size_t old_len = v->plain_len;
	bool renamed;
	vault_put_be(hdr + 8, VAULT_VERSION, 2);
	int rc = seal_and_write(v->path, hdr, key, next, next_len, false, &renamed, err, errlen);
	/* A failed directory fsync still means the rename happened: the new content is what
	 * the file holds now, so adopt it once the rename succeeded. */
	if (!renamed) {
		vault_secret_free(next, next_len);
		return rc;
	}
	v->plain = next;
	v->plain_len = next_len;
	memcpy(old_hdr, v->hdr, VAULT_HDR_LEN);
	memcpy(v->hdr, hdr, VAULT_HDR_LEN); /* the version parse reads */
	if (vault_parse_plain(v) < 0) {	    /* cannot happen: we built it */
		v->plain = old;
		v->plain_len = old_len;
		memcpy(v->hdr, old_hdr, VAULT_HDR_LEN);
		vault_secret_free(next, next_len);
		return -EPROTO;
	}
	vault_secret_free(old, old_len);
	if (key != v->key)
		memcpy(v->key, key, KEY_LEN);
	return rc;
}

static int edit(struct vault *v, const char *name, enum vault_kind kind, const unsigned char *val,
		size_t len, char *err, size_t errlen)
{
	if (v->lock_fd < 0) {
		errbuf_set(err, errlen, "vault %s was opened read-only", v->path);
		return -EBADF;
	}
	if (!vault_name_valid(name)) {
		/* The name is not echoed: a mistyped command line may hold a value there. */
		errbuf_set(err, errlen,
			   "secret name not allowed: use 1-64 of A-Z a-z 0-9 _ . - "
			   "(not starting with . or -)");
		return -EINVAL;
	}
	if (!val && !find(v, name)) {
		errbuf_set(err, errlen, "vault %s has no secret named %s", v->path, name);
		return -ENOENT;
	}
	if (val && (len == 0 || len > VAULT_VALUE_MAX)) {
		errbuf_set(err, errlen, "a secret value must be 1 to %d bytes", VAULT_VALUE_MAX);
		return -EINVAL;
	}
	unsigned char *next;
	size_t next_len;
	int rc = vault_build_plain(v, name, kind, val, len, &next, &next_len);
	if (rc < 0) {
		errbuf_set(err, errlen, "vault %s would exceed its limits (%d secrets, %d bytes)",
			   v->path, VAULT_ENTRIES_MAX, VAULT_PLAIN_MAX);
		return rc;
	}
	unsigned char hdr[VAULT_HDR_LEN];
	memcpy(hdr, v->hdr, VAULT_HDR_LEN);
	return commit(v, hdr, v->key, next, next_len, err, errlen);
}

int vault_put_kind(struct vault *v, const char *name, enum vault_kind kind,
		   const unsigned char *val, size_t len, char *err, size_t errlen)
{
	if (!val || kind > VAULT_KIND_MAX) {
		errbuf_set(err, errlen, val ? "unknown secret kind" : "no value given");
		return -EINVAL;
	}
	return edit(v, name, kind, val, len, err, errlen);
}

int vault_put(struct vault *v, const char *name, const unsigned char *val, size_t len, char *err,
	      size_t errlen)
{
	return vault_put_kind(v, name, VAULT_KIND_STATIC, val, len, err, errlen);
}

int vault_rm(struct vault *v, const char *name, char *err, size_t errlen)
{
	return edit(v, name, VAULT_KIND_STATIC, NULL, 0, err, errlen);
}

int vault_rekey(struct vault *v, const struct vault_cred *cred, const struct vault_kdf *kdf,
		char *err, size_t errlen)
{
	if (v->lock_fd < 0) {
		errbuf_set(err, errlen, "vault %s was opened read-only", v->path);
		return -EBADF;
	}
	unsigned char hdr[VAULT_HDR_LEN];
	unsigned char *key = vault_secret_alloc(KEY_LEN);
	unsigned char *next = NULL;
	size_t next_len = 0;
	int rc = -ENOMEM;
	if (!key || vault_build_plain(v, NULL, VAULT_KIND_STATIC, NULL, 0, &next, &next_len) < 0) {
		errbuf_set(err, errlen, "out of memory re-keying vault %s", v->path);
		goto out;
	}
	rc = vault_new_header(hdr, cred, kdf);
	if (rc == 0)
		rc = vault_derive_key(hdr, cred, key, v->path, err, errlen);
	if (rc == 0) {
		rc = commit(v, hdr, key, next, next_len, err, errlen);
		next = NULL; /* commit owns it now */
	}
out:
	vault_secret_free(next, next_len);
	vault_secret_free(key, KEY_LEN);
	return rc;
}
