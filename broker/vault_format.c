/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_format.c: the vault's bytes (layout in vault.h) — building and checking the
 * header, and parsing and building the plaintext list of entries. Everything here reads
 * or writes memory only; files and ciphers are elsewhere. */
#include "broker/vault_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

const struct vault_kdf vault_kdf_default = { .log2_n = 17, .r = 8, .p = 1 };

void vault_put_be(unsigned char *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

uint64_t vault_get_be(const unsigned char *p, int n)
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

/* A header for a new key: magic, version, kdf, a random salt. */
int vault_new_header(unsigned char *h, const struct vault_cred *c, const struct vault_kdf *kdf)
{
	memset(h, 0, VAULT_HDR_LEN);
	memcpy(h, VAULT_MAGIC, sizeof(VAULT_MAGIC));
	vault_put_be(h + 8, VAULT_VERSION, 2);
	if (c->kind == VAULT_CRED_KEY_FILE) {
		h[10] = KDF_KEY_FILE;
	} else {
		if (!kdf)
			kdf = &vault_kdf_default;
		h[10] = KDF_SCRYPT;
		h[11] = kdf->log2_n;
		vault_put_be(h + 12, kdf->r, 4);
		vault_put_be(h + 16, kdf->p, 4);
	}
	return RAND_bytes(h + 20, SALT_LEN) == 1 ? 0 : -EIO;
}

/* Checks a header before anything is derived from it. */
int vault_check_header(const unsigned char *h, size_t file_len, const char *path, char *err,
		       size_t errlen)
{
	if (file_len < VAULT_HDR_LEN + VAULT_TAG_LEN ||
	    memcmp(h, VAULT_MAGIC, sizeof(VAULT_MAGIC)) != 0) {
		errbuf_set(err, errlen,
			   "%s is not a bulkhead vault, or is truncated (%zu bytes); "
			   "restore it from a backup",
			   path, file_len);
		return file_len < VAULT_HDR_LEN + VAULT_TAG_LEN ? -EBADMSG : -EPROTO;
	}
	unsigned ver = (unsigned)vault_get_be(h + 8, 2);
	if (ver != 1 && ver != VAULT_VERSION) {
		errbuf_set(err, errlen,
			   "vault %s has format version %u; this bulkhead reads 1 to %d", path, ver,
			   VAULT_VERSION);
		return -EPROTO;
	}
	unsigned kdf = h[10], log2n = h[11];
	uint64_t r = vault_get_be(h + 12, 4), p = vault_get_be(h + 16, 4);
	bool ok;
	if (kdf == KDF_KEY_FILE)
		ok = log2n == 0 && r == 0 && p == 0;
	else
		ok = kdf == KDF_SCRYPT && log2n >= 1 && log2n <= SCRYPT_LOG2N_MAX && r >= 1 &&
		     r <= SCRYPT_R_MAX && p >= 1 && p <= SCRYPT_P_MAX &&
		     128 * r * (1ULL << log2n) <= SCRYPT_MEM_MAX;
	if (!ok) {
		errbuf_set(err, errlen,
			   "vault %s has an unknown or out-of-range key derivation in its header; "
			   "restore it from a backup",
			   path);
		return -EPROTO;
	}
	if (vault_get_be(h + 48, 8) != file_len - VAULT_HDR_LEN - VAULT_TAG_LEN) {
		errbuf_set(err, errlen,
			   "vault %s is truncated or extended (length field does not match its "
			   "%zu bytes); restore it from a backup",
			   path, file_len);
		return -EBADMSG;
	}
	return 0;
}

/* Indexes v->plain into v->ents; the plaintext is authenticated, but is still parsed with
 * every length checked and must be canonical (sorted, unique, valid names, no slack). */
int vault_parse_plain(struct vault *v)
{
	const unsigned char *p = v->plain, *end = v->plain + v->plain_len;
	const size_t kb = vault_get_be(v->hdr + 8, 2) >= 2; /* a kind byte per entry */
	if (end - p < 4)
		return -EPROTO;
	uint64_t n = vault_get_be(p, 4);
	p += 4;
	if (n > VAULT_ENTRIES_MAX)
		return -EPROTO;
	struct entry *e = n ? calloc(n, sizeof(*e)) : NULL;
	if (n && !e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (end - p < 1 || (size_t)(end - p) < 1 + p[0] + kb + 8 + 8 + 4)
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
		e[i].kind = kb ? p[0] : VAULT_KIND_STATIC;
		if (e[i].kind > VAULT_KIND_MAX)
			goto bad;
		p += kb;
		e[i].created = (int64_t)vault_get_be(p, 8);
		e[i].updated = (int64_t)vault_get_be(p + 8, 8);
		size_t vl = (size_t)vault_get_be(p + 16, 4);
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
	return 1 + name_len + 1 + 8 + 8 + 4 + val_len;
}

static unsigned char *emit(unsigned char *p, const char *name, enum vault_kind kind,
			   int64_t created, int64_t updated, const unsigned char *val, size_t len)
{
	size_t nl = strlen(name);
	*p++ = (unsigned char)nl;
	memcpy(p, name, nl);
	p += nl;
	*p++ = (unsigned char)kind;
	vault_put_be(p, (uint64_t)created, 8);
	vault_put_be(p + 8, (uint64_t)updated, 8);
	vault_put_be(p + 16, len, 4);
	p += 20;
	memcpy(p, val, len);
	return p + len;
}

/* Builds the next plaintext (version 2) in fresh locked memory: v's entries with name set to
 * val (val NULL: name removed; name NULL: v's entries as they are). */
int vault_build_plain(const struct vault *v, const char *name, enum vault_kind kind,
		      const unsigned char *val, size_t len, unsigned char **out, size_t *out_len)
{
	if (!name)
		name = "";
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
	vault_put_be(p, count, 4);
	p += 4;
	for (size_t i = 0; i <= v->n; i++) {
		const struct entry *e = i < v->n ? &v->ents[i] : NULL;
		int cmp = e ? strcmp(e->name, name) : 1;
		if (cmp == 0)
			created = e->created;
		if (cmp >= 0 && val && !done) {
			p = emit(p, name, kind, created, now, val, len);
			done = true;
		}
		if (e && cmp != 0)
			p = emit(p, e->name, e->kind, e->created, e->updated, v->plain + e->off,
				 e->len);
	}
	*out = buf;
	*out_len = total;
	return 0;
}
