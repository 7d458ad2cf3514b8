/* SPDX-License-Identifier: Apache-2.0 */
/* serve/sessions.c: the session table — a checked create (serve/create.c) served by a guest
 * from the pool when the request can be bound to one that is up, else by a cold boot
 * (serve/boot.c); get, list and delete; and the main thread's side: a supervisor's end, and
 * deadlines. */
#include "session/exit_codes.h"
#include "session/pause_ask.h"
#include "session/rundir.h"
#include "session/session_reap.h"
#include "lib/tree_remove.h"
#include "serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DELETE_WAIT_S 20

/* A session the peer may see: another uid's is as absent as one that never was. */
static struct serve_session *find(const char *id, const struct serve_peer *peer)
{
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		if (s->ready && !s->in_pool && !s->deleted && strcmp(s->id, id) == 0)
			return serve_peer_owns(peer, s) ? s : NULL;
	return NULL;
}

struct serve_session *serve_session_get(const char *id, const struct serve_peer *peer)
{
	pthread_mutex_lock(&serve.lock);
	struct serve_session *s = find(id, peer);
	if (s)
		s->refs++;
	pthread_mutex_unlock(&serve.lock);
	return s;
}

static void unlink_session(struct serve_session *s)
{
	for (struct serve_session **p = &serve.sessions; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			serve.nsessions--;
			return;
		}
}

void serve_session_free(struct serve_session *s)
{
	free(s->image_env_text);
	for (size_t i = 0; i < s->nenv; i++)
		free(s->env[i]);
	free(s);
}

void serve_session_put(struct serve_session *s)
{
	pthread_mutex_lock(&serve.lock);
	bool last = --s->refs == 0 && s->deleted;
	pthread_mutex_unlock(&serve.lock);
	if (last)
		serve_session_free(s);
}

json_t *serve_session_json(const struct serve_session *s)
{
	json_t *o = json_pack("{ss ss sb ss? ss? ss sb sb ss? ss? si si sf sf sf}", "id", s->id,
			      "state", s->ended ? "ended" : s->paused ? "paused" : "running", "pooled", s->pooled,
			      "pool_miss", s->pool_miss[0] ? s->pool_miss : NULL, "image",
			      s->image[0] ? s->image : NULL, "work", s->work, "work_ro", s->work_ro,
			      "work_owned", s->work_owned, "broker", s->broker, "audit_log",
			      s->audit[0] ? s->audit : NULL, "mem_mib", (int)s->mem_mib, "cpus",
			      (int)s->cpus, "timeout_s", s->timeout_s, "created_at", s->created_at,
			      "ready_ms", s->ready_ms);
	json_object_set_new(o, "exit_code", s->ended ? json_integer(s->exit_code) : json_null());
	json_object_set_new(o, "end_reason",
			    s->end_reason[0] ? json_string(s->end_reason) : json_null());
	json_object_set_new(o, "end_message",
			    s->end_message[0] ? json_string(s->end_message) : json_null());
	return o;
}

json_t *serve_sessions_json(const struct serve_peer *peer)
{
	json_t *a = json_array();
	pthread_mutex_lock(&serve.lock);
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		if (s->ready && !s->in_pool && !s->deleted && serve_peer_owns(peer, s))
			json_array_append_new(a, serve_session_json(s));
	pthread_mutex_unlock(&serve.lock);
	return json_pack("{so}", "sessions", a);
}

void serve_rmtree(const char *path)
{
	char err[PATH_MAX + 128];
	if (tree_remove(AT_FDCWD, path, err, sizeof(err)) < 0)
		fprintf(stderr, "bulkhead serve: %s\n", err);
}

/* A scope naming a work directory (or rules in one): that share is given at boot. A scope
 * file is read here only to choose; the supervisor reads it again, once, for the binding, and
 * refuses such a scope if the file changed meanwhile. */
static bool scope_asks_share(const struct serve_create *c)
{
	json_t *o = c->scope_inline;
	struct stat st;
	/* Without blocking on what the path became since the create was checked (a FIFO): a
	 * file that cannot be read here is the supervisor's to refuse. */
	int fd = !o && c->scope_path ? open(c->scope_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (1 << 20))
		o = json_loadfd(fd, JSON_REJECT_DUPLICATES, NULL);
	else
		json_incref(o);
	if (fd >= 0)
		close(fd);
	bool asks = json_object_get(o, "work") != NULL;
	json_decref(o);
	return asks;
}

/* Why a create cannot take a pool guest ("" : it can, from *pool). */
static void pool_miss(const struct serve_create *c, int *pool, char *why, size_t whylen)
{
	why[0] = '\0';
	if (!serve.pool_size || !c->pool)
		return;
	if ((*pool = serve_pool_find(c, why, whylen)) < 0)
		return;
	if (c->work)
		snprintf(why, whylen, "a host work directory is shared before boot");
	else if (c->work_rules || c->share_secrets || c->share_allow)
		snprintf(why, whylen, "rules inside the work directory are given to it at boot");
	else if (scope_asks_share(c))
		snprintf(why, whylen, "the scope asks for a work directory, shared before boot");
	else if (c->mem_limit_mib)
		snprintf(why, whylen, "the memory limit is set at boot");
}

/* A new session in the table (not ready: invisible to clients), or NULL. */
struct serve_session *serve_session_new(void)
{
	struct serve_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->mem_mib = 256;
	s->cpus = 1;
	s->created_at = serve_wall();
	pthread_mutex_lock(&serve.lock);
	if (serve.nsessions >= SERVE_SESSIONS_MAX) {
		pthread_mutex_unlock(&serve.lock);
		free(s);
		errno = EAGAIN;
		return NULL;
	}
	s->next = serve.sessions;
	serve.sessions = s;
	serve.nsessions++;
	pthread_mutex_unlock(&serve.lock);
	return s;
}

/* What a create binds to a guest that is up: its environment and deadline. */
static int bind_request(struct serve_session *s, const struct serve_create *c, double t0)
{
	const char *k;
	json_t *v;
	json_object_foreach(c->env, k, v)
	{
		if (asprintf(&s->env[s->nenv], "%s=%s", k, json_string_value(v)) < 0)
			return -1;
		s->nenv++;
	}
	s->timeout_s = c->timeout_s;
	long long now = serve_now_ms();
	s->deadline_ms = c->timeout_s > 0 ? now + (long long)(c->timeout_s * 1000) : 0;
	s->ready_ms = (serve_wall() - t0) * 1000;
	return 0;
}

/* A tenant (an --allow-uid peer) names no host path: what it names the daemon would open as
 * root, and a check of its rights beforehand does not bind what a guest (root in its VM) or
 * the files API later do inside. Its sessions get a work directory of their own, filled
 * through the files API; its scope comes inline. */
static int tenant_check(const struct serve_create *c, const struct serve_peer *peer, char *why,
			size_t whylen)
{
	if (serve_peer_admin(peer) ||
	    !(c->work || c->scope_path || c->vault || c->ca_file || c->audit || c->broker))
		return 0;
	snprintf(why, whylen,
		 "uid %u names no host path: \"work\", \"scope\" files, \"vault\", "
		 "\"ca_file\", \"audit\" and \"broker\" are for root and the daemon's uid (a "
		 "tenant's session has a work directory of its own, and its scope inline)",
		 (unsigned)peer->uid);
	return -1;
}

/* A pool guest that could not be bound: stopped and removed, never returned to the pool. */
static void discard(struct serve_session *s)
{
	pthread_mutex_lock(&serve.lock);
	s->refs++; /* ours while the stop lets the lock go */
	serve_session_stop(s);
	unlink_session(s);
	pthread_cond_broadcast(&serve.changed);
	pthread_mutex_unlock(&serve.lock);
	serve_session_cleanup(s);
	serve_session_free(s);
}

struct serve_session *serve_create(const struct serve_create *c, const struct serve_peer *peer,
				   enum serve_err *err, char *why, size_t whylen)
{
	if (tenant_check(c, peer, why, whylen) < 0) {
		*err = SERVE_E_FORBIDDEN;
		return NULL;
	}
	double t0 = serve_wall();
	char miss[sizeof(((struct serve_session *)0)->pool_miss)];
	int pool = -1;
	pool_miss(c, &pool, miss, sizeof(miss));
	struct serve_session *s = NULL;
	char digest[65] = "";
	if (serve.pool_size && c->pool && !miss[0]) {
		pthread_mutex_lock(&serve.lock);
		s = serve_pool_take((unsigned)pool);
		pthread_cond_broadcast(&serve.changed); /* the pool refills */
		pthread_mutex_unlock(&serve.lock);
		if (!s)
			snprintf(miss, sizeof(miss), "the pool was empty");
	}
	int bound =
		s && (c->scope_path || c->scope_inline) ? serve_bind(s, c, digest, why, whylen) : 0;
	if (bound == -1) { /* refused: as a cold start would have been */
		*err = SERVE_E_REFUSED;
		discard(s);
		return NULL;
	}
	if (bound == -2) { /* the guest could not take a binding: another boot serves */
		snprintf(miss, sizeof(miss), "the pool guest could not be bound: %.60s", why);
		discard(s);
		s = NULL;
	}
	if (!s) {
		s = serve_session_new();
		if (!s) {
			*err = SERVE_E_BUSY;
			snprintf(why, whylen, "at most %d sessions", SERVE_SESSIONS_MAX);
			return NULL;
		}
		snprintf(s->pool_miss, sizeof(s->pool_miss), "%s", serve.pool_size ? miss : "");
		if (serve_boot(s, c, NULL, why, whylen) < 0) {
			*err = SERVE_E_REFUSED;
			pthread_mutex_lock(&serve.lock);
			unlink_session(s);
			pthread_mutex_unlock(&serve.lock);
			serve_session_cleanup(s);
			serve_session_free(s);
			return NULL;
		}
	}
	pthread_mutex_lock(&serve.lock);
	s->created_at = serve_wall();
	s->owner_uid = peer->uid;
	if (digest[0])
		serve_event("session.bound", s,
			    json_pack("{ssss}", "scope_sha256", digest, "broker", s->broker));
	int rc = bind_request(s, c, t0);
	s->ready = true;
	s->refs++;
	pthread_cond_broadcast(&serve.changed);
	if (rc < 0) {
		char id[sizeof(s->id)];
		memcpy(id, s->id, sizeof(id)); /* another delete may free it once it is let go */
		pthread_mutex_unlock(&serve.lock);
		serve_session_put(s);
		json_t *gone = NULL;
		serve_delete(id, peer, &gone);
		json_decref(gone);
		*err = SERVE_E_INTERNAL;
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	serve_event("session.started", s, json_pack("{sb}", "pooled", s->pooled));
	pthread_mutex_unlock(&serve.lock);
	return s;
}

void serve_session_stop(struct serve_session *s)
{
	if (!s->ended && s->pid > 0)
		kill(s->pid, SIGTERM);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += DELETE_WAIT_S;
	while (!s->ended)
		if (pthread_cond_timedwait(&serve.changed, &serve.lock, &until) == ETIMEDOUT)
			break;
	if (!s->ended && s->pid > 0) {
		kill(s->pid, SIGKILL);
		while (!s->ended)
			pthread_cond_wait(&serve.changed, &serve.lock);
	}
}

void serve_session_cleanup(struct serve_session *s)
{
	if (s->id[0]) {
		struct rundir rd;
		char err[320];
		if (rundir_open(&rd, s->id, err, sizeof(err)) == 0) {
			session_reap_cgroups(&rd, true);
			rundir_remove(&rd);
		}
		session_pause_files_remove(s->id); /* its supervisor's to remove, unless killed */
		serve_record_remove(s->id);
	} else if (s->log[0]) {
		unlink(s->log);
	}
	if (s->work_owned)
		serve_rmtree(s->work);
	if (s->scope_file[0])
		unlink(s->scope_file);
}

enum serve_err serve_delete(const char *id, const struct serve_peer *peer, json_t **out)
{
	pthread_mutex_lock(&serve.lock);
	struct serve_session *s = find(id, peer);
	if (!s) {
		pthread_mutex_unlock(&serve.lock);
		return SERVE_E_NOT_FOUND;
	}
	/* Held from here: the stop below waits with the lock let go, and a request still
	 * holding the session (an exec stream that ends as its guest does) lets go meanwhile. */
	s->refs++;
	s->deleted = true; /* no new request finds it */
	serve_session_stop(s);
	if (!s->end_reason[0] || !strcmp(s->end_reason, "stopped"))
		snprintf(s->end_reason, sizeof(s->end_reason), "deleted");
	unlink_session(s);
	*out = serve_session_json(s);
	serve_event("session.deleted", s, NULL);
	/* Ours until its files are gone; whichever lets go last frees it. */
	pthread_mutex_unlock(&serve.lock);
	serve_session_cleanup(s);
	serve_session_put(s);
	return SERVE_OK;
}

void serve_reaped(pid_t pid, int st)
{
	pthread_mutex_lock(&serve.lock);
	struct serve_session *s = serve.sessions;
	while (s && s->pid != pid)
		s = s->next;
	if (!s) {
		pthread_mutex_unlock(&serve.lock);
		return;
	}
	s->pid = 0;
	s->ended = true;
	s->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	const char *event = NULL;
	if (s->deleted) {
		snprintf(s->end_reason, sizeof(s->end_reason), "deleted");
	} else if (s->timed_out) {
		snprintf(s->end_reason, sizeof(s->end_reason), "timed_out");
		s->exit_code = EXIT_TIMEOUT; /* as `bulkhead run --timeout` */
	} else if (s->exit_code == EXIT_TIMEOUT) {
		/* The supervisor's own end: the scope's expiry or the policy's lifetime. */
		serve_session_last_line(s, s->end_message, sizeof(s->end_message));
		snprintf(s->end_reason, sizeof(s->end_reason), "timed_out");
		event = "session.timed_out";
	} else {
		serve_session_last_line(s, s->end_message, sizeof(s->end_message));
		bool oom = strstr(s->end_message, "memory limit") != NULL;
		snprintf(s->end_reason, sizeof(s->end_reason), "%s",
			 oom		     ? "over_memory"
			 : s->exit_code == 0 ? "exited"
					     : "failed");
		event = oom ? "session.over_memory" : NULL;
	}
	if (s->ready && !s->in_pool) {
		if (event)
			serve_event(event, s, NULL);
		serve_event("session.ended", s,
			    json_pack("{sssi}", "end_reason", s->end_reason, "exit_code",
				      s->exit_code));
	}
	pthread_cond_broadcast(&serve.changed);
	pthread_mutex_unlock(&serve.lock);
}

void serve_tick(void)
{
	long long now = serve_now_ms();
	pthread_mutex_lock(&serve.lock);
	for (struct serve_session *s = serve.sessions; s; s = s->next) {
		if (s->ready && !s->ended && !s->timed_out && s->deadline_ms &&
		    now >= s->deadline_ms && s->pid > 0) {
			s->timed_out = true;
			kill(s->pid, SIGTERM);
			serve_event("session.timed_out", s, NULL);
		}
	}
	/* Pool guests that ended before anyone took them go. */
	for (struct serve_session **p = &serve.sessions; *p;) {
		struct serve_session *s = *p;
		if (s->in_pool && s->ended && s->ready) {
			*p = s->next;
			serve.nsessions--;
			serve_session_cleanup(s);
			serve_session_free(s);
			pthread_cond_broadcast(&serve.changed);
		} else {
			p = &s->next;
		}
	}
	pthread_mutex_unlock(&serve.lock);
}

/* TERM to every supervisor; the main thread reaps them (serve_all_ended). */
void serve_stop_all(int sig)
{
	pthread_mutex_lock(&serve.lock);
	serve.stopping = true;
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		if (!s->ended && s->pid > 0)
			kill(s->pid, sig);
	pthread_cond_broadcast(&serve.changed);
	pthread_mutex_unlock(&serve.lock);
}

bool serve_all_ended(void)
{
	pthread_mutex_lock(&serve.lock);
	bool all = true;
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		all &= s->ended || s->pid <= 0;
	pthread_mutex_unlock(&serve.lock);
	return all;
}

/* The daemon's end: what each session left, removed. */
void serve_cleanup_all(void)
{
	pthread_mutex_lock(&serve.lock);
	for (struct serve_session *s = serve.sessions; s; s = s->next)
		serve_session_cleanup(s);
	pthread_mutex_unlock(&serve.lock);
}
