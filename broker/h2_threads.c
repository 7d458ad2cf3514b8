/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_threads.c: the threads that serve an HTTP/2 tunnel's streams (h2_stream.h). Each
 * is a connection state of its own (proxy_conn_new), served as a request inside a tunnel to
 * the CONNECT host; the tunnel's state (its configuration above all) outlives them all. */
#include "broker/h2_stream.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/hold_budget.h"
#include "broker/proxy_internal.h"

#define STREAM_STACK (256 << 10) /* as the connection loop's workers */

struct stream_thread {
	struct h2_threads *t;
	const struct proxy_config *cfg;
	unsigned long id;
	char host[RULES_HOST_MAX + 1];
	int port, fd;
};

static void *stream_main(void *arg)
{
	struct stream_thread *st = arg;
	struct h2_threads *t = st->t;
	struct conn *c = proxy_conn_new(st->cfg, st->fd, st->id);

	if (c) {
		proxy_tunnel_stream(c, st->host, st->port);
		proxy_conn_serve(c, -1, NULL, NULL);
		proxy_conn_free(c);
	}
	close(st->fd);
	hold_budget_give(st->cfg->h2_session, st->cfg->h2_total, 0, 1);
	free(st);
	pthread_mutex_lock(&t->lock);
	if (!--t->live)
		pthread_cond_signal(&t->idle);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

void h2_threads_init(struct h2_threads *t)
{
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->idle, NULL);
	t->live = 0;
}

int h2_thread_start(struct h2_threads *t, const struct conn *tun, const char **over)
{
	struct stream_thread *st;
	pthread_attr_t attr;
	pthread_t th;
	int sv[2], rc;

	*over = NULL;
	if (hold_budget_take(tun->cfg->h2_session, tun->cfg->h2_total, 0, 1, over))
		return -1;
	if (!(st = malloc(sizeof(*st)))) {
		hold_budget_give(tun->cfg->h2_session, tun->cfg->h2_total, 0, 1);
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		hold_budget_give(tun->cfg->h2_session, tun->cfg->h2_total, 0, 1);
		free(st);
		return -1;
	}
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	*st = (struct stream_thread){
		.t = t, .cfg = tun->cfg, .id = tun->id, .port = tun->tun_port, .fd = sv[1]
	};
	memcpy(st->host, tun->tun_host, sizeof(st->host));
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, STREAM_STACK);
	pthread_mutex_lock(&t->lock);
	t->live++;
	pthread_mutex_unlock(&t->lock);
	rc = pthread_create(&th, &attr, stream_main, st);
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_mutex_lock(&t->lock);
		t->live--;
		pthread_mutex_unlock(&t->lock);
		close(sv[0]);
		close(sv[1]);
		free(st);
		hold_budget_give(tun->cfg->h2_session, tun->cfg->h2_total, 0, 1);
		return -1;
	}
	return sv[0];
}

void h2_threads_wait(struct h2_threads *t)
{
	pthread_mutex_lock(&t->lock);
	while (t->live)
		pthread_cond_wait(&t->idle, &t->lock);
	pthread_mutex_unlock(&t->lock);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->idle);
}
