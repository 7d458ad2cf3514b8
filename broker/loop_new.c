/* SPDX-License-Identifier: Apache-2.0 */
/* broker/loop_new.c: the connection loop's interface (loop.h): made with its backend and bounds,
 * started, given sessions' listening sockets and told when they end. */
#include "broker/loop_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#define DEFAULT_TOTAL_MAX 32768 /* open connections, when the descriptor limit allows more */

/* --- the interface ------------------------------------------------------------------------- */

/* What the descriptor limit allows. A connection holds one descriptor; one being served a
 * second (its upstream's), and TLS or a name lookup may briefly take a third: of the limit
 * less 256 for the broker's own files, a sixth (at most 1024) is the bound on connections
 * served at once in all, and what is left after twice that the bound on connections open. */
static void limits_from_nofile(struct loop_limits *lim)
{
	struct rlimit rl;
	unsigned long f = 2 * DEFAULT_TOTAL_MAX, a, t;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		f = rl.rlim_cur > 512 ? rl.rlim_cur - 256 : rl.rlim_cur / 2;
	a = f / 6 > 1024 ? 1024 : f / 6 ? f / 6 : 1;
	t = f > 2 * a ? f - 2 * a : 1;
	if (t > DEFAULT_TOTAL_MAX)
		t = DEFAULT_TOTAL_MAX;
	if (!lim->max_total || lim->max_total > t)
		lim->max_total = (unsigned)t;
	if (!lim->max_active_total || lim->max_active_total > a)
		lim->max_active_total = (unsigned)a;
}

struct loop *loop_new(enum loop_kind kind, const struct loop_limits *lim, char *err, size_t errlen)
{
	struct loop *l = calloc(1, sizeof(*l));
	pthread_condattr_t ca;
	int rc = -ENOSYS;

	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->wake_kind = IT_WAKE;
	l->lim = *lim;
	limits_from_nofile(&l->lim);
	if (kind != LOOP_EPOLL)
		rc = loop_uring_new(&l->b, l->fallback_why, sizeof(l->fallback_why));
	if (rc < 0 && kind == LOOP_URING) {
		snprintf(err, errlen, "event loop: %s", l->fallback_why);
		free(l);
		return NULL;
	}
	if (rc < 0 && kind == LOOP_EPOLL)
		l->fallback_why[0] = '\0'; /* asked for */
	if (rc < 0 && loop_epoll_new(&l->b, err, errlen) < 0) {
		free(l);
		return NULL;
	}
	l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (l->efd < 0 || l->spare_fd < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(errno));
		l->b->free(l->b);
		free(l);
		return NULL;
	}
	pthread_mutex_init(&l->in_lock, NULL);
	pthread_mutex_init(&l->wq_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wq_cond, &ca);
	pthread_condattr_destroy(&ca);
	return l;
}

const char *loop_backend_name(const struct loop *l)
{
	return l->b->name;
}

const char *loop_fallback_why(const struct loop *l)
{
	return l->fallback_why;
}

const struct loop_limits *loop_limits(const struct loop *l)
{
	return &l->lim;
}

int loop_start(struct loop *l)
{
	return -pthread_create(&l->thread, NULL, loop_main, l);
}

struct loop_session *loop_listen(struct loop *l, int lfd, const struct loop_client *cl)
{
	struct loop_session *ls = calloc(1, sizeof(*ls));
	int fl = fcntl(lfd, F_GETFL);

	if (!ls || fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) < 0) {
		free(ls);
		close(lfd);
		return NULL;
	}
	*ls = (struct loop_session){
		.kind = IT_LISTENER, .l = l, .cl = *cl, .lfd = lfd, .next_id = 1
	};
	loop_post_session(ls, 1, 0);
	return ls;
}

void loop_unlisten(struct loop_session *ls)
{
	loop_post_session(ls, 0, 1);
}
