/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_live.c: the broker's vault kept current (vault_live.h). One lock guards the
 * open vault and the look at the file: a reader never sees a vault half swapped, and a new
 * file is opened once whatever the number of requests that notice it. */
#include "broker/vault_live.h"

#include "broker/vault.h"
#include "lib/mono.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

/* A value a secret held before: replaced or removed by a new file. */
struct retired {
	char name[VAULT_NAME_MAX + 1];
	unsigned char *val; /* locked (vault_secret_alloc) */
	size_t len;
	unsigned serial;
	int64_t until_ms; /* monotonic: no longer scrubbed from then (a token that expired) */
};

struct vault_live {
	pthread_mutex_t lock;
	char *path, *key_path;
	struct vault_cred *cred;
	struct vault *v;
	struct file_id loaded, refused; /* the file in use; the last one that could not be */
	struct file_id key_refused;	/* the key file when that one was refused */
	bool have_refused;
	_Atomic unsigned gen; /* new files taken */
	struct retired retired[VAULT_LIVE_RETIRED_MAX];
	size_t n_retired;
	unsigned serial; /* the last value retired */
};

static void file_id_of(const struct stat *st, struct file_id *id)
{
	*id = (struct file_id){ st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim };
}

static bool same(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

int vault_live_open(const char *path, const char *key_file, struct vault_live **out, char *err,
		    size_t errlen)
{
	struct vault_live *l = calloc(1, sizeof(*l));
	struct stat st;
	if (!l || !(l->path = strdup(path)) || !(l->key_path = strdup(key_file))) {
		if (l)
			free(l->path);
		free(l);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&l->lock, NULL);
	if (vault_cred_load(VAULT_CRED_KEY_FILE, key_file, &l->cred, err, errlen) < 0)
		goto fail;
	if (stat(path, &st) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (vault_open(path, l->cred, VAULT_RDONLY, &l->v, err, errlen) < 0)
		goto fail;
	/* The identity is taken before the open: a file replaced in between is opened again at
	 * the first read, never missed. */
	file_id_of(&st, &l->loaded);
	*out = l;
	return 0;
fail:
	vault_cred_free(l->cred);
	free(l->key_path);
	free(l->path);
	free(l);
	return -1;
}

static void drop_retired(struct vault_live *l, size_t i);

void vault_live_close(struct vault_live *l)
{
	if (!l)
		return;
	while (l->n_retired)
		drop_retired(l, l->n_retired - 1);
	vault_close(l->v);
	vault_cred_free(l->cred);
	pthread_mutex_destroy(&l->lock);
	free(l->key_path);
	free(l->path);
	free(l);
}

static void drop_retired(struct vault_live *l, size_t i)
{
	vault_secret_free(l->retired[i].val, l->retired[i].len);
	memmove(l->retired + i, l->retired + i + 1, sizeof(l->retired[0]) * (l->n_retired - i - 1));
	l->n_retired--;
}

/* Keeps VAL (locked memory, now the list's) as a value NAME held before, unless it is kept
 * already (then only its time changes). Whether the list has a value it did not have. Lock
 * held. */
static bool retire(struct vault_live *l, const char *name, unsigned char *val, size_t len,
		   int64_t until_ms)
{
	for (size_t i = 0; i < l->n_retired; i++)
		if (l->retired[i].len == len && !strcmp(l->retired[i].name, name) &&
		    !CRYPTO_memcmp(l->retired[i].val, val, len)) {
			l->retired[i].until_ms = until_ms;
			vault_secret_free(val, len);
			return false;
		}
	/* Those scrubbed no more go; then, while NAME's values for a time (obtained tokens)
	 * would hold more than VAULT_LIVE_RETIRED_BYTES (each costs every connection's scrubber
	 * its length), the oldest of them; and the oldest of all when the list is full. Values
	 * kept for good (a vault's, a client's secret) are bounded by the list alone. */
	size_t held = until_ms == INT64_MAX ? 0 : len;
	for (size_t i = l->n_retired; i-- > 0;)
		if (l->retired[i].until_ms <= mono_ms())
			drop_retired(l, i);
		else if (!strcmp(l->retired[i].name, name) && l->retired[i].until_ms != INT64_MAX)
			held += l->retired[i].len;
	for (size_t i = 0; i < l->n_retired && held > VAULT_LIVE_RETIRED_BYTES;)
		if (!strcmp(l->retired[i].name, name) && l->retired[i].until_ms != INT64_MAX) {
			held -= l->retired[i].len;
			drop_retired(l, i);
		} else {
			i++;
		}
	if (l->n_retired == VAULT_LIVE_RETIRED_MAX)
		drop_retired(l, 0);
	struct retired *r = &l->retired[l->n_retired++];
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->val = val;
	r->len = len;
	r->serial = ++l->serial;
	r->until_ms = until_ms;
	return true;
}

/* Keeps OLD's value of each secret that NV changes or removes, so that echoes of it are still
 * scrubbed (vault_live_retired); the oldest goes when the list is full. */
static void retire_changed(struct vault_live *l, const struct vault *old, const struct vault *nv)
{
	struct vault_entry_info e;

	for (size_t i = 0; vault_entry(old, i, &e) == 0; i++) {
		unsigned char *was, *now;
		size_t wn, nn;
		bool kept = false;

		/* A typed entry's document is never injected (token_cache.c retires its tokens). */
		if (e.kind != VAULT_KIND_STATIC || vault_get(old, e.name, &was, &wn) < 0)
			continue;
		if (vault_get(nv, e.name, &now, &nn) == 0) {
			kept = nn == wn && CRYPTO_memcmp(now, was, wn) == 0;
			vault_secret_free(now, nn);
		}
		if (kept || !wn) {
			vault_secret_free(was, wn);
			continue;
		}
		retire(l, e.name, was, wn, INT64_MAX);
	}
}

/* The key file, read again when the vault cannot be opened with the key kept: a key put in its
 * place after `bulkhead vault rotate-key` is taken with the file it opens. */
static int open_with_new_key(struct vault_live *l, struct vault **nv)
{
	struct vault_cred *cred = NULL;
	char kerr[256];

	if (vault_cred_load(VAULT_CRED_KEY_FILE, l->key_path, &cred, kerr, sizeof(kerr)) < 0 ||
	    vault_open(l->path, cred, VAULT_RDONLY, nv, kerr, sizeof(kerr)) < 0) {
		vault_cred_free(cred);
		return -1;
	}
	vault_cred_free(l->cred);
	l->cred = cred;
	return 0;
}

static void key_file_id(const struct vault_live *l, struct file_id *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (stat(l->key_path, &st) == 0)
		file_id_of(&st, id);
}

/* Takes a new file at the path when there is one. Called with the lock held. */
static void refresh(struct vault_live *l)
{
	struct stat st;
	struct file_id now, key;
	char err[512] = "";
	if (stat(l->path, &st) < 0) {
		snprintf(err, sizeof(err), "%s: %s", l->path, strerror(errno));
		memset(&now, 0, sizeof(now));
	} else {
		file_id_of(&st, &now);
		if (same(&now, &l->loaded))
			return;
		key_file_id(l, &key);
		if (l->have_refused && same(&now, &l->refused) && same(&key, &l->key_refused))
			return; /* refused already, and no new key since */
		struct vault *nv = NULL;
		int rc = vault_open(l->path, l->cred, VAULT_RDONLY, &nv, err, sizeof(err));
		if (rc == -EBADMSG && open_with_new_key(l, &nv) == 0)
			rc = 0;
		if (rc == 0) {
			retire_changed(l, l->v, nv);
			vault_close(l->v);
			l->v = nv;
			l->loaded = now;
			l->have_refused = false;
			l->gen++;
			fprintf(stderr,
				"bulkhead-broker: vault %s changed: %zu entries in use from now\n",
				l->path, vault_count(nv));
			return;
		}
	}
	if (l->have_refused && same(&now, &l->refused))
		return; /* said already */
	l->refused = now;
	key_file_id(l, &l->key_refused);
	l->have_refused = true;
	fprintf(stderr,
		"bulkhead-broker: vault %s changed but cannot be used (%s); the one loaded before "
		"stays in use\n",
		l->path, err);
}

unsigned vault_live_generation(struct vault_live *l)
{
	pthread_mutex_lock(&l->lock);
	refresh(l);
	unsigned gen = l->gen;
	pthread_mutex_unlock(&l->lock);
	return gen;
}

unsigned vault_live_current(struct vault_live *l)
{
	return l->gen;
}

int vault_live_retired(struct vault_live *l, const char *name, unsigned after, unsigned *serial,
		       uint8_t **val, size_t *len)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->n_retired; i++) {
		const struct retired *r = &l->retired[i];

		if (r->serial <= after || strcmp(r->name, name) || r->until_ms <= mono_ms())
			continue;
		*val = malloc(r->len);
		if (!*val) {
			rc = -ENOMEM;
			break;
		}
		memcpy(*val, r->val, r->len);
		*len = r->len;
		*serial = r->serial;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int vault_live_get(struct vault_live *l, const char *name, uint8_t **val, size_t *len)
{
	return vault_live_get_kind(l, name, NULL, val, len);
}

int vault_live_get_kind(struct vault_live *l, const char *name, enum vault_kind *kind,
			uint8_t **val, size_t *len)
{
	unsigned char *locked;
	size_t n;
	pthread_mutex_lock(&l->lock);
	refresh(l);
	int rc = vault_get(l->v, name, &locked, &n);
	if (rc == 0 && kind)
		*kind = (enum vault_kind)vault_kind(l->v, name);
	pthread_mutex_unlock(&l->lock);
	if (rc < 0)
		return rc;
	*val = malloc(n + 1);
	if (*val) {
		memcpy(*val, locked, n);
		*len = n;
	}
	vault_secret_free(locked, n);
	return *val ? 0 : -ENOMEM;
}

void vault_live_retire(struct vault_live *l, const char *name, const uint8_t *val, size_t len,
		       int64_t until_ms)
{
	unsigned char *copy = len ? vault_secret_alloc(len) : NULL;

	if (!copy)
		return;
	memcpy(copy, val, len);
	pthread_mutex_lock(&l->lock);
	/* Connections take a new value at their next read (the generation); one kept already
	 * changes nothing they scrub, and must not make every connection start again. */
	if (retire(l, name, copy, len, until_ms))
		l->gen++;
	pthread_mutex_unlock(&l->lock);
}

void vault_live_bump(struct vault_live *l)
{
	l->gen++;
}

int vault_live_update(struct vault_live *l, const char *name, enum vault_kind kind,
		      const uint8_t *was, size_t was_len, const uint8_t *val, size_t len, char *err,
		      size_t errlen)
{
	struct vault *v = NULL;
	unsigned char *cur = NULL;
	size_t cur_len = 0;
	int rc;

	pthread_mutex_lock(&l->lock);
	rc = vault_open(l->path, l->cred, VAULT_RDWR, &v, err, errlen);
	if (rc == 0 && (vault_kind(v, name) != (int)kind || vault_get(v, name, &cur, &cur_len) ||
			cur_len != was_len || CRYPTO_memcmp(cur, was, was_len))) {
		snprintf(err, errlen, "entry %s changed in the vault meanwhile; it is kept", name);
		rc = -ESTALE;
	}
	if (rc == 0)
		rc = vault_put_kind(v, name, kind, val, len, err, errlen);
	vault_secret_free(cur, cur_len);
	vault_close(v);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

int vault_live_kind(struct vault_live *l, const char *name)
{
	pthread_mutex_lock(&l->lock);
	int k = vault_kind(l->v, name);
	pthread_mutex_unlock(&l->lock);
	return k;
}
