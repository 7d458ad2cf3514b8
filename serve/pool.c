/* SPDX-License-Identifier: Apache-2.0 */
/* serve/pool.c: the warm pool — guests booted ahead of demand by one thread, one at a time
 * (a boot takes both cores' worth under TCG), each with a new work directory of its own.
 * A create takes a ready one (serve_pool_take); the thread then boots its replacement. A
 * pool guest is never returned: deleted, it is gone. */
#include "serve/serve.h"

#include "session/rundir.h"
#include "session/session_reap.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define RETRY_S 5
#define WARM_MS 30000

static pthread_t thread;

static unsigned ready_count(void)
{
	unsigned n = 0;
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		n += s->in_pool && s->ready && !s->ended;
	return n;
}

/* Waits on serve.changed for at most secs (lock held). */
static void wait_changed(int secs)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += secs;
	pthread_cond_timedwait(&serve.changed, &serve.lock, &until);
}

static void *refill(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&serve.lock);
	while (!serve.stopping) {
		if (ready_count() >= serve.pool_size) {
			wait_changed(1);
			continue;
		}
		serve.pool_booting++;
		pthread_mutex_unlock(&serve.lock);
		struct serve_session *s = serve_session_new();
		char why[512] = "at the session limit";
		int rc = -1;
		if (s) {
			pthread_mutex_lock(&serve.lock);
			s->in_pool = true;
			pthread_mutex_unlock(&serve.lock);
			rc = serve_boot(s, NULL, why, sizeof(why));
		}
		/* A guest's first command is slow under TCG (its kernel's fork, exec and vsock
		 * paths are translated then): that cost is paid here, not by the first create. */
		char *warm[] = { "/bin/sh", "-c", "echo warm; cat /dev/null", NULL },
		     *warm2[] = { "echo", "warm", NULL };
		if (rc == 0 && (serve_exec_quiet(s, warm, WARM_MS) != 0 ||
				serve_exec_quiet(s, warm2, WARM_MS) != 0 ||
				serve_exec_quiet(s, warm2, WARM_MS) != 0)) {
			snprintf(why, sizeof(why), "its warm-up command failed");
			rc = -1;
			pthread_mutex_lock(&serve.lock);
			serve_session_stop(s);
			pthread_mutex_unlock(&serve.lock);
		}
		pthread_mutex_lock(&serve.lock);
		serve.pool_booting--;
		if (rc == 0) {
			s->ready = true; /* serve_tick removes it if it ends in the pool */
			serve_event("pool.ready", s, NULL);
			pthread_cond_broadcast(&serve.changed);
			continue;
		}
		if (s) {
			s->ready = true;
			s->ended = true; /* serve_tick cleans it up */
		}
		if (!serve.stopping)
			fprintf(stderr, "bulkhead serve: a pool guest did not boot: %s\n", why);
		wait_changed(RETRY_S);
	}
	pthread_mutex_unlock(&serve.lock);
	return NULL;
}

int serve_pool_start(void)
{
	if (!serve.pool_size)
		return 0;
	int rc = pthread_create(&thread, NULL, refill, NULL);
	if (rc) {
		errno = rc;
		return -1;
	}
	pthread_detach(thread);
	return 0;
}

/* Every thread of a file of ids (a cgroup's "tasks" or "cgroup.threads") at nice n. */
static void renice_file(const char *path, int n)
{
	FILE *f = fopen(path, "re");
	long tid;
	while (f && fscanf(f, "%ld", &tid) == 1)
		setpriority(PRIO_PROCESS, (id_t)tid, n);
	if (f)
		fclose(f);
}

/* A pool guest waits at POOL_NICE, so that booting ahead never slows sessions in use; taken,
 * every thread of its supervisor and its cgroups comes back to 0. Only root may raise a
 * priority again, so only root lowers it (serve/spawn.c). */
/* Every thread of one cgroup directory ("tasks" on v1, "cgroup.threads" on v2). */
static void renice_cgroup(const char *dir, void *arg)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/tasks", dir);
	renice_file(path, *(int *)arg);
	snprintf(path, sizeof(path), "%s/cgroup.threads", dir);
	renice_file(path, *(int *)arg);
}

void serve_pool_renice(const struct serve_session *s, int n)
{
	char path[64], err[320];
	struct rundir rd;
	if (geteuid() != 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->pid);
	DIR *d = s->pid > 0 ? opendir(path) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			setpriority(PRIO_PROCESS, (id_t)atol(e->d_name), n);
	if (d)
		closedir(d);
	if (rundir_open(&rd, s->id, err, sizeof(err)) == 0)
		session_cgroups_each(&rd, renice_cgroup, &n);
}

struct serve_session *serve_pool_take(void)
{
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		if (s->in_pool && s->ready && !s->ended) {
			s->in_pool = false;
			s->pooled = true;
			s->ready = false; /* until bound: serve_create makes it ready */
			serve_pool_renice(s, 0);
			return s;
		}
	return NULL;
}

json_t *serve_pool_json(void)
{
	pthread_mutex_lock(&serve.lock);
	json_t *o = json_pack("{si si si ss?}", "size", (int)serve.pool_size, "ready",
			      (int)ready_count(), "booting", (int)serve.pool_booting, "image",
			      serve.pool_image[0] ? serve.pool_image : NULL);
	pthread_mutex_unlock(&serve.lock);
	return o;
}
