/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_live.c: the broker's vault kept current (vault_live.h). One lock guards the
 * open vault and the look at the file: a reader never sees a vault half swapped, and a new
 * file is opened once whatever the number of requests that notice it. */
#include "broker/vault_live.h"

#include "broker/vault.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

struct vault_live {
	pthread_mutex_t lock;
	char *path;
	struct vault_cred *cred;
	struct vault *v;
	struct file_id loaded, refused; /* the file in use; the last one that could not be */
	bool have_refused;
	unsigned gen; /* new files taken */
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
	if (!l || !(l->path = strdup(path))) {
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
	free(l->path);
	free(l);
	return -1;
}

/* Takes a new file at the path when there is one. Called with the lock held. */
static void refresh(struct vault_live *l)
{
	struct stat st;
	struct file_id now;
	char err[512] = "";
	if (stat(l->path, &st) < 0) {
		snprintf(err, sizeof(err), "%s: %s", l->path, strerror(errno));
		memset(&now, 0, sizeof(now));
	} else {
		file_id_of(&st, &now);
		if (same(&now, &l->loaded) || (l->have_refused && same(&now, &l->refused)))
			return;
		struct vault *nv = NULL;
		if (vault_open(l->path, l->cred, VAULT_RDONLY, &nv, err, sizeof(err)) == 0) {
			vault_close(l->v);
			l->v = nv;
			l->loaded = now;
			l->have_refused = false;
			l->gen++;
			fprintf(stderr, "bulkhead-broker: vault %s changed: %zu entries in use from now\n",
				l->path, vault_count(nv));
			return;
		}
	}
	if (l->have_refused && same(&now, &l->refused))
		return; /* said already */
	l->refused = now;
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

int vault_live_get(struct vault_live *l, const char *name, uint8_t **val, size_t *len)
{
	unsigned char *locked;
	size_t n;
	pthread_mutex_lock(&l->lock);
	refresh(l);
	int rc = vault_get(l->v, name, &locked, &n);
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
