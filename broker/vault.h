/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault.h: the secret vault — one AES-256-GCM file, opened with a key file or a
 * passphrase (scrypt); the broker reads secrets from it, `bulkhead vault` edits it. */
#ifndef BULKHEAD_BROKER_VAULT_H
#define BULKHEAD_BROKER_VAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * File format, version 2 (all integers big-endian):
 *
 *   off len  field
 *     0   8  magic "BHVAULT\0"
 *     8   2  format version (2; 1 is read too)
 *    10   1  kdf: 1 = key file (HKDF-SHA256), 2 = passphrase (scrypt)
 *    11   1  scrypt log2(N)      (0 for a key file)
 *    12   4  scrypt r            (0 for a key file)
 *    16   4  scrypt p            (0 for a key file)
 *    20  16  salt (fixed per key; changed by rotate-key)
 *    36  12  GCM nonce (random, new on every write)
 *    48   8  ciphertext length
 *    56   n  ciphertext
 *  56+n  16  GCM tag
 *
 * The whole 56-byte header is the GCM additional data, so no header byte can change
 * unnoticed. The plaintext is a list of entries sorted by name:
 *   u32 count, then per entry: u8 name length, name, u8 kind (enum vault_kind; version 2
 *   only, version 1 entries are static), u64 created, u64 updated (Unix seconds), u32 value
 *   length, value. Every write makes a version 2 file.
 */
#define VAULT_MAGIC	   "BHVAULT"
#define VAULT_VERSION	   2
#define VAULT_HDR_LEN	   56
#define VAULT_TAG_LEN	   16
#define VAULT_NAME_MAX	   64
#define VAULT_VALUE_MAX	   (64 * 1024)	     /* one secret: tokens, PEM keys */
#define VAULT_PLAIN_MAX	   (4 * 1024 * 1024) /* the whole plaintext: stays under mlock limits */
#define VAULT_ENTRIES_MAX  1024
#define VAULT_KEY_FILE_LEN 64 /* hex digits of a 32-byte key; a trailing newline is allowed */

enum vault_cred_kind {
	VAULT_CRED_KEY_FILE = 1,   /* 32 random bytes as 64 hex digits, file mode 0600 */
	VAULT_CRED_PASSPHRASE = 2, /* a passphrase file (one trailing newline dropped), 0600 */
};

/* scrypt cost; a vault records its own in the header. */
struct vault_kdf {
	uint8_t log2_n;
	uint32_t r, p;
};
/* The default: N = 2^17, r = 8, p = 1 (128 MiB, OWASP's recommendation for scrypt). */
extern const struct vault_kdf vault_kdf_default;

struct vault_cred; /* key material in locked memory */
struct vault;

/* What an entry's value is (broker/cred.h reads the typed ones): a static value is injected as
 * it is; the others are a JSON document from which the broker obtains what it injects. */
enum vault_kind {
	VAULT_KIND_STATIC = 0,
	VAULT_KIND_OAUTH2_REFRESH = 1,
	VAULT_KIND_OAUTH2_CLIENT = 2, /* oauth2-client-credentials */
	VAULT_KIND_GITHUB_APP = 3,
	VAULT_KIND_AWS_SIGV4 = 4, /* a key that signs requests (broker/aws_sigv4.h) */
	VAULT_KIND_MAX = VAULT_KIND_AWS_SIGV4,
};

struct vault_entry_info {
	const char *name; /* valid until the vault changes or closes */
	enum vault_kind kind;
	size_t size;
	int64_t created, updated;
};

/* Errors: functions return 0 or a negative errno and, when err is given, one line saying
 * what failed, where, and what to do. Notable codes: -EBADMSG the vault failed
 * authentication (wrong key or passphrase, or the file was changed or truncated);
 * -EPROTO the file is not a vault this version can read; -EACCES a key or passphrase file
 * others can read; -ENOENT no such vault or entry. */

/* A name is 1-64 of [A-Za-z0-9_.-] and does not start with '.' or '-'. */
bool vault_name_valid(const char *name);

/* Reads a key file or passphrase file into locked memory. The file must be a regular file
 * owned by us with no group or other permission bits. */
int vault_cred_load(enum vault_cred_kind kind, const char *path, struct vault_cred **out, char *err,
		    size_t errlen);
/* Creates a new random key file (O_EXCL, 0600, fsynced with its directory). */
int vault_key_file_create(const char *path, char *err, size_t errlen);
void vault_cred_free(struct vault_cred *c);

/* Creates an empty vault at path; refuses if anything exists there. kdf applies to a
 * passphrase (NULL: vault_kdf_default). */
int vault_create(const char *path, const struct vault_cred *cred, const struct vault_kdf *kdf,
		 char *err, size_t errlen);

/* VAULT_RDWR takes an exclusive lock on the vault's directory until vault_close, so two
 * writers never lose each other's changes; readers need no lock (writes are renames). */
#define VAULT_RDONLY 0
#define VAULT_RDWR   1
int vault_open(const char *path, const struct vault_cred *cred, int flags, struct vault **out,
	       char *err, size_t errlen);
void vault_close(struct vault *v);

size_t vault_count(const struct vault *v);
int vault_entry(const struct vault *v, size_t i, struct vault_entry_info *out);
/* A copy of the value in its own locked memory; release it with vault_secret_free. */
int vault_get(const struct vault *v, const char *name, unsigned char **buf, size_t *len);
/* NAME's kind, or -ENOENT. */
int vault_kind(const struct vault *v, const char *name);
/* Wipes and unmaps a buffer from vault_get or vault_secret_alloc. */
void vault_secret_free(unsigned char *buf, size_t len);
/* Locked, non-dumpable, wiped-on-fork memory for a plaintext secret (NULL on failure). */
unsigned char *vault_secret_alloc(size_t len);

/* Each of these rewrites the file atomically (temp file, fsync, rename, directory fsync);
 * on any failure the previous file is intact. They need VAULT_RDWR. */
int vault_put(struct vault *v, const char *name, const unsigned char *val, size_t len, char *err,
	      size_t errlen);
/* vault_put with a kind (vault_put stores VAULT_KIND_STATIC). */
int vault_put_kind(struct vault *v, const char *name, enum vault_kind kind,
		   const unsigned char *val, size_t len, char *err, size_t errlen);
int vault_rm(struct vault *v, const char *name, char *err, size_t errlen);
/* Re-encrypts under a new key file or passphrase (new salt, new nonce). */
int vault_rekey(struct vault *v, const struct vault_cred *cred, const struct vault_kdf *kdf,
		char *err, size_t errlen);

#endif
