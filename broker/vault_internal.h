/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_internal.h: the vault's internals, shared by its files — the open vault's
 * state and the helpers each file lends the others. Not an interface: vault.h is. vault.c
 * opens, reads and edits a vault; vault_format.c lays out its bytes; vault_crypto.c holds
 * keys and ciphers; vault_file.c reads, replaces and locks files; vault_mem.c gives the
 * locked memory every plaintext lives in. */
#ifndef BULKHEAD_BROKER_VAULT_INTERNAL_H
#define BULKHEAD_BROKER_VAULT_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker/vault.h"
#include "lib/errbuf.h"

#define KEY_LEN	     32
#define SALT_LEN     16
#define NONCE_LEN    12
#define KDF_KEY_FILE 1
#define KDF_SCRYPT   2
/* Bounds on header parameters, checked before running scrypt: a vault file must not be
 * able to make us allocate gigabytes or spin for minutes. */
#define SCRYPT_LOG2N_MAX 22
#define SCRYPT_R_MAX	 32
#define SCRYPT_P_MAX	 16
#define SCRYPT_MEM_MAX	 (1024ULL * 1024 * 1024)

struct vault_cred {
	enum vault_cred_kind kind;
	unsigned char *buf; /* locked: the 32-byte key, or the passphrase */
	size_t len;
};

struct entry {
	char name[VAULT_NAME_MAX + 1];
	enum vault_kind kind;
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

/* vault_format.c */
void vault_put_be(unsigned char *p, uint64_t v, int n);
uint64_t vault_get_be(const unsigned char *p, int n);
int vault_new_header(unsigned char *h, const struct vault_cred *c, const struct vault_kdf *kdf);
int vault_check_header(const unsigned char *h, size_t file_len, const char *path, char *err,
		       size_t errlen);
int vault_parse_plain(struct vault *v);
int vault_build_plain(const struct vault *v, const char *name, enum vault_kind kind,
		      const unsigned char *val, size_t len, unsigned char **out, size_t *out_len);

/* vault_crypto.c */
/* The queued OpenSSL error as text, for messages (clears the queue). */
const char *vault_ossl_err(void);
int vault_derive_key(const unsigned char *hdr, const struct vault_cred *c, unsigned char *key,
		     const char *path, char *err, size_t errlen);
int vault_gcm(bool enc, const unsigned char *key, const unsigned char *hdr, const unsigned char *in,
	      size_t in_len, unsigned char *out, unsigned char *tag);

/* vault_file.c */
ssize_t vault_read_small(int fd, unsigned char *buf, size_t max);
int vault_fsync_dir(const char *path);
int vault_write_atomic(const char *path, const unsigned char *data, size_t len, bool noreplace,
		       bool *renamed, char *err, size_t errlen);
/* Locks path's directory (returns its fd) and clears stale temp files from it. */
int vault_lock_dir(const char *path, char *err, size_t errlen);

#endif
