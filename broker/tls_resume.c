/* SPDX-License-Identifier: Apache-2.0 */
/* broker/tls_resume.c: per-session stores of upstream TLS sessions (tls_resume.h). OpenSSL
 * hands every new session of a connection to the store the connection was attached to (a TLS
 * 1.3 ticket arrives after the handshake, with the first read), and attach takes one out. */
#include "broker/tls_resume.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509.h>

#define KEY_MAX 300 /* a name (<= 253), a newline, a port */

struct entry {
	char key[KEY_MAX];
	SSL_SESSION *s[TLS_RESUME_PER_KEY]; /* oldest first */
	unsigned n;
	unsigned long used; /* when last stored to or taken from: the least recent goes first */
};

struct tls_resume {
	pthread_mutex_t lock;
	struct entry e[TLS_RESUME_KEYS];
	unsigned long clock;
};

/* What a connection carries so that its new sessions find their store. */
struct tag {
	struct tls_resume *r;
	char key[KEY_MAX];
};

static int tag_index = -1;
static pthread_once_t tag_once = PTHREAD_ONCE_INIT;

static void tag_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	free(ptr);
}

static void tag_index_make(void)
{
	tag_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, tag_free);
}

static int usable(const SSL_SESSION *s)
{
	time_t t = time(NULL);

	return SSL_SESSION_is_resumable(s) &&
	       t < (time_t)SSL_SESSION_get_time(s) + (time_t)SSL_SESSION_get_timeout(s);
}

static struct entry *find(struct tls_resume *r, const char *key)
{
	for (unsigned i = 0; i < TLS_RESUME_KEYS; i++)
		if (r->e[i].n && !strcmp(r->e[i].key, key))
			return &r->e[i];
	return NULL;
}

static void entry_clear(struct entry *e)
{
	for (unsigned i = 0; i < e->n; i++)
		SSL_SESSION_free(e->s[i]);
	e->n = 0;
}

/* OpenSSL's new-session callback: 1 when the store took the reference. */
static int on_new_session(SSL *ssl, SSL_SESSION *s)
{
	struct tag *t = tag_index >= 0 ? SSL_get_ex_data(ssl, tag_index) : NULL;
	struct tls_resume *r;
	struct entry *e;

	/* Only what a full, verified handshake made (a failed check ends the handshake before
	 * this). A resumed handshake shows no certificate: sessions it brought would let a
	 * server that kept its ticket keys but not a certificate the CA signs go on for ever. */
	if (!t || !usable(s) || SSL_session_reused(ssl) || SSL_get_verify_result(ssl) != X509_V_OK)
		return 0;
	r = t->r;
	pthread_mutex_lock(&r->lock);
	e = find(r, t->key);
	if (!e) {
		e = &r->e[0];
		for (unsigned i = 1; i < TLS_RESUME_KEYS && e->n; i++)
			if (!r->e[i].n || r->e[i].used < e->used)
				e = &r->e[i];
		entry_clear(e);
		snprintf(e->key, sizeof(e->key), "%s", t->key);
	}
	if (e->n == TLS_RESUME_PER_KEY) {
		SSL_SESSION_free(e->s[0]);
		memmove(e->s, e->s + 1, (TLS_RESUME_PER_KEY - 1) * sizeof(e->s[0]));
		e->n--;
	}
	e->s[e->n++] = s;
	e->used = ++r->clock;
	pthread_mutex_unlock(&r->lock);
	return 1;
}

int tls_resume_ctx_init(SSL_CTX *ctx)
{
	pthread_once(&tag_once, tag_index_make);
	if (tag_index < 0)
		return -1;
	SSL_CTX_set_session_cache_mode(ctx,
				       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, on_new_session);
	return 0;
}

struct tls_resume *tls_resume_new(void)
{
	struct tls_resume *r = calloc(1, sizeof(*r));

	if (r && pthread_mutex_init(&r->lock, NULL)) {
		free(r);
		r = NULL;
	}
	return r;
}

void tls_resume_free(struct tls_resume *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < TLS_RESUME_KEYS; i++)
		entry_clear(&r->e[i]);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int tls_resume_attach(struct tls_resume *r, SSL *ssl, const char *host, unsigned port)
{
	struct tag *t;
	struct entry *e;
	SSL_SESSION *s = NULL;
	int n, offered = 0;

	if (!r || tag_index < 0)
		return 0;
	t = malloc(sizeof(*t));
	if (!t)
		return -1;
	t->r = r;
	n = snprintf(t->key, sizeof(t->key), "%s\n%u", host, port);
	if (n < 0 || (size_t)n >= sizeof(t->key) || SSL_set_ex_data(ssl, tag_index, t) != 1) {
		free(t);
		return -1;
	}
	pthread_mutex_lock(&r->lock);
	e = find(r, t->key);
	while (e && e->n && !s) {
		s = e->s[--e->n]; /* the newest */
		e->used = ++r->clock;
		if (!usable(s)) {
			SSL_SESSION_free(s);
			s = NULL;
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (s) {
		offered = SSL_set_session(ssl, s) == 1;
		SSL_SESSION_free(s); /* used once: the connection holds its own reference */
	}
	return offered;
}
