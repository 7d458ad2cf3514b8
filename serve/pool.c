/* SPDX-License-Identifier: Apache-2.0 */
/* serve/pool.c: the warm pools — one per shape (image, memory, vCPUs) — of guests booted
 * ahead of demand by one thread, one at a time (a boot takes both cores' worth under TCG),
 * each with a new work directory, its own session CA and a broker that allows nothing until
 * it is bound (serve/bind.c). A create takes a ready guest of its shape (serve_pool_take); the
 * thread then boots a replacement for the pool furthest below its size. A pool guest is never
 * returned: deleted, it is gone. */
#include "serve/serve.h"

#include "session/request_limits.h"
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

/* Ready guests of pool i (i = npools: of every pool). */
static unsigned ready_count(unsigned i)
{
	unsigned n = 0;
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		n += s->in_pool && s->ready && !s->ended && (i == serve.npools || s->pool == i);
	return n;
}

/* The pool furthest below its size (counting those booting), or -1 when all are full. */
static int neediest(void)
{
	int best = -1;
	long gap = 0;
	for (unsigned i = 0; i < serve.npools; i++) {
		const struct serve_pool *p = &serve.pools[i];
		long g = (long)p->size - (long)ready_count(i) - (long)p->booting;
		if (g > gap) {
			gap = g;
			best = (int)i;
		}
	}
	return best;
}

/* "mem=MIB" or "cpus=N" (within the create's own bounds) into *v; 0, or -1. */
static int shape_num(const char *part, const char *key, unsigned lo, unsigned hi, unsigned *v)
{
	size_t k = strlen(key);
	char *end;
	if (strncmp(part, key, k) || part[k] != '=')
		return 1; /* not this key */
	unsigned long n = strtoul(part + k + 1, &end, 10);
	if (end == part + k + 1 || *end || n < lo || n > hi || *v)
		return -1;
	*v = (unsigned)n;
	return 0;
}

int serve_pool_parse(const char *arg)
{
	char *end, buf[256];
	long n = strtol(arg, &end, 10);
	struct serve_pool p = { 0 };
	if (end == arg || n < 0 || n > 64 || (*end && *end != ':') || strlen(end) >= sizeof(buf) ||
	    serve.npools == SERVE_POOLS_MAX)
		return -1;
	p.size = (unsigned)n;
	snprintf(buf, sizeof(buf), "%s", *end ? end + 1 : "");
	for (char *part = *end ? buf : NULL, *next; part; part = next) {
		next = strchr(part, ':');
		if (next)
			*next++ = '\0';
		int m = shape_num(part, "mem", REQ_MEM_MIN_MIB, REQ_MEM_MAX_MIB, &p.mem_mib);
		int c = m > 0 ? shape_num(part, "cpus", 1, REQ_CPUS_MAX, &p.cpus) : m;
		if (c < 0)
			return -1;
		if (c > 0) { /* the image: first, once, a name */
			if (part != buf || !*part || strchr(part, '/') || strchr(part, '=') ||
			    strlen(part) >= sizeof(p.image))
				return -1;
			snprintf(p.image, sizeof(p.image), "%s", part);
		}
	}
	p.mem_mib = p.mem_mib ? p.mem_mib : REQ_MEM_DEFAULT_MIB;
	p.cpus = p.cpus ? p.cpus : 1;
	for (unsigned i = 0; i < serve.npools; i++)
		if (!strcmp(serve.pools[i].image, p.image) && serve.pools[i].mem_mib == p.mem_mib &&
		    serve.pools[i].cpus == p.cpus)
			return -1;
	serve.pools[serve.npools++] = p;
	serve.pool_size += p.size;
	return 0;
}

int serve_pool_find(const struct serve_create *c, char *why, size_t whylen)
{
	const char *image = c->image ? c->image : "";
	unsigned mem = c->mem_mib ? c->mem_mib : REQ_MEM_DEFAULT_MIB, cpus = c->cpus ? c->cpus : 1;
	for (unsigned i = 0; i < serve.npools; i++) {
		const struct serve_pool *p = &serve.pools[i];
		if (p->size && !strcmp(p->image, image) && p->mem_mib == mem && p->cpus == cpus)
			return (int)i;
	}
	snprintf(why, whylen, "no pool of %s%.40s, %u MiB, %u vCPU%s", image[0] ? "image " : "",
		 image[0] ? image : "no image", mem, cpus, cpus == 1 ? "" : "s");
	return -1;
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
		int i = neediest();
		if (i < 0) {
			wait_changed(1);
			continue;
		}
		struct serve_pool *pool = &serve.pools[i];
		pool->booting++;
		pthread_mutex_unlock(&serve.lock);
		struct serve_session *s = serve_session_new();
		char why[512] = "at the session limit";
		int rc = -1;
		if (s) {
			pthread_mutex_lock(&serve.lock);
			s->in_pool = true;
			s->pool = (unsigned)i;
			pthread_mutex_unlock(&serve.lock);
			rc = serve_boot(s, NULL, pool, why, sizeof(why));
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
		pool->booting--;
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

struct serve_session *serve_pool_take(unsigned i)
{
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		if (s->in_pool && s->ready && !s->ended && s->pool == i) {
			s->in_pool = false;
			s->pooled = true;
			s->ready = false; /* until bound: serve_create makes it ready */
			serve_pool_renice(s, 0);
			return s;
		}
	return NULL;
}

/* Every pool's state, and in all (its image: the first pool's, as before shapes). */
json_t *serve_pool_json(void)
{
	json_t *pools = json_array();
	unsigned booting = 0;
	pthread_mutex_lock(&serve.lock);
	for (unsigned i = 0; i < serve.npools; i++) {
		const struct serve_pool *p = &serve.pools[i];
		booting += p->booting;
		json_array_append_new(pools, json_pack("{si si si ss? si si}", "size", (int)p->size,
						       "ready", (int)ready_count(i), "booting",
						       (int)p->booting, "image",
						       p->image[0] ? p->image : NULL, "mem_mib",
						       (int)p->mem_mib, "cpus", (int)p->cpus));
	}
	const char *image = serve.npools && serve.pools[0].image[0] ? serve.pools[0].image : NULL;
	json_t *o = json_pack("{si si si ss? so}", "size", (int)serve.pool_size, "ready",
			      (int)ready_count(serve.npools), "booting", (int)booting, "image",
			      image, "pools", pools);
	pthread_mutex_unlock(&serve.lock);
	return o;
}
