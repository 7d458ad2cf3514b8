/* SPDX-License-Identifier: Apache-2.0 */
/* serve/sessions.c: the session table — a create request checked field by field, a guest
 * from the pool when the request can be bound to one that is up, else a cold boot; get,
 * list and delete; and the main thread's side: a supervisor's end, and deadlines. */
#include "session/broker_dev.h"
#include "session/exit_codes.h"
#include "session/request_fields.h"
#include "session/rundir.h"
#include "session/session_reap.h"
#include "lib/json_strict.h"
#include "lib/tree_remove.h"
#include "serve/serve.h"
#include "session/share_rules.h"

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

static const char *const create_keys[] = {
	"image",   "work", "work_ro",	    "scope",	 "vault", "ca_file", "broker", "audit",
	"mem_mib", "cpus", "mem_limit_mib", "timeout_s", "env",	  "pool",    "work_rules",
	"share_secrets", "share_secrets_allow", NULL,
};

static int str_field(json_t *body, const char *key, const char **out, bool abs_path, char *why,
		     size_t whylen)
{
	json_t *v = json_object_get(body, key);
	if (!v || json_is_null(v))
		return 0;
	const char *s = json_string_value(v);
	if (!s || !*s || strlen(s) >= PATH_MAX - 64 || (abs_path && s[0] != '/')) {
		snprintf(why, whylen, "\"%s\" must be %s", key,
			 abs_path ? "an absolute path" : "a non-empty string");
		return -1;
	}
	*out = s;
	return 0;
}

/* A number of the session request: its bounds are its field's (session/request_fields.h). */
static int num_field(json_t *body, const char *key, double *out, char *why, size_t whylen)
{
	const struct request_field *f = request_field_by_key(key);
	json_t *v = json_object_get(body, key);
	if (!v || json_is_null(v))
		return 0;
	if (!f || !json_is_number(v) || (f->type == REQ_UINT && !json_is_integer(v)))
		return request_field_number_ok(f, -1, why, whylen);
	*out = json_number_value(v);
	return request_field_number_ok(f, *out, why, whylen);
}

static int bool_field(json_t *body, const char *key, bool *out, char *why, size_t whylen)
{
	json_t *v = json_object_get(body, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(why, whylen, "\"%s\" must be true or false", key);
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

/* An environment object: names without '=' and values without NUL, within bounds. */
int serve_env_check(json_t *env, size_t max, char *why, size_t whylen)
{
	if (!env || json_is_null(env))
		return 0;
	if (!json_is_object(env) || json_object_size(env) > max) {
		snprintf(why, whylen, "\"env\" must be an object of at most %zu names", max);
		return -1;
	}
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v)
	{
		size_t vlen = json_string_length(v);
		if (!*k || strchr(k, '=') || strlen(k) > 255 || !json_is_string(v) || vlen > 4096 ||
		    strlen(json_string_value(v)) != vlen) {
			snprintf(why, whylen,
				 "\"env\": each name non-empty without '=' (at most 255 bytes), "
				 "each value a string of at most 4096 bytes without NUL");
			return -1;
		}
	}
	return 0;
}

/* Whether dir is, holds or is inside --state or the run directory (or is under /proc): a
 * guest there could rewrite the daemon's records. */
static bool work_is_ours(const char *dir)
{
	char real[PATH_MAX], base[PATH_MAX], rstate[PATH_MAX];
	if (!realpath(dir, real))
		return false; /* the supervisor says why it cannot share it */
	const char *ours[2] = { realpath(serve.state, rstate), NULL };
	if (rundir_base(base, sizeof(base)) == 0)
		ours[1] = base;
	if (!strncmp(real, "/proc", 5) && (!real[5] || real[5] == '/'))
		return true;
	for (size_t i = 0; i < 2; i++) {
		if (!ours[i])
			continue;
		size_t a = strlen(real), b = strlen(ours[i]);
		size_t n = a < b ? a : b;
		if (!strncmp(real, ours[i], n) &&
		    (a == b || (a < b ? ours[i][a] == '/' || !strcmp(real, "/") : real[b] == '/')))
			return true;
	}
	return false;
}

int serve_create_parse(json_t *body, struct serve_create *c, char *why, size_t whylen)
{
	memset(c, 0, sizeof(*c));
	c->pool = true;
	const char *unknown = json_strict_unknown(body, create_keys);
	if (unknown) {
		snprintf(why, whylen, "unknown field \"%s\"", unknown);
		return -1;
	}
	double mem = 0, cpus = 0, limit = 0, timeout = 0;
	json_t *scope = json_object_get(body, "scope");
	if (json_is_object(scope))
		c->scope_inline = scope;
	else if (str_field(body, "scope", &c->scope_path, true, why, whylen) < 0)
		return -1;
	if (str_field(body, "image", &c->image, false, why, whylen) < 0 ||
	    str_field(body, "work", &c->work, true, why, whylen) < 0 ||
	    str_field(body, "vault", &c->vault, true, why, whylen) < 0 ||
	    str_field(body, "ca_file", &c->ca_file, true, why, whylen) < 0 ||
	    str_field(body, "broker", &c->broker, true, why, whylen) < 0 ||
	    str_field(body, "audit", &c->audit, true, why, whylen) < 0 ||
	    bool_field(body, "work_ro", &c->work_ro, why, whylen) < 0 ||
	    bool_field(body, "pool", &c->pool, why, whylen) < 0 ||
	    num_field(body, "mem_mib", &mem, why, whylen) < 0 ||
	    num_field(body, "cpus", &cpus, why, whylen) < 0 ||
	    num_field(body, "mem_limit_mib", &limit, why, whylen) < 0 ||
	    num_field(body, "timeout_s", &timeout, why, whylen) < 0)
		return -1;
	if ((c->work && strchr(c->work, ':')) || (c->image && strchr(c->image, '/'))) {
		snprintf(why, whylen, "\"%s\" may not hold '%c'",
			 c->work && strchr(c->work, ':') ? "work" : "image",
			 c->work && strchr(c->work, ':') ? ':' : '/');
		return -1;
	}
	/* The files a broker reads must be files: a FIFO would hold the session's start. */
	const char *files[] = { c->scope_path, c->vault, c->ca_file };
	const char *names[] = { "scope", "vault", "ca_file" };
	for (size_t i = 0; i < 3; i++) {
		struct stat st;
		if (files[i] && (stat(files[i], &st) < 0 || !S_ISREG(st.st_mode))) {
			snprintf(why, whylen, "\"%s\": %s is not a regular file", names[i],
				 files[i]);
			return -1;
		}
	}
	if (serve_share_parse(body, c, why, whylen) < 0)
		return -1;
	if (c->work && work_is_ours(c->work)) {
		snprintf(why, whylen, "\"work\": %s holds or is inside the daemon's own files",
			 c->work);
		return -1;
	}
	if ((c->vault || c->ca_file || c->audit) && !c->scope_path && !c->scope_inline) {
		snprintf(why, whylen, "\"vault\", \"ca_file\" and \"audit\" need a \"scope\"");
		return -1;
	}
	if (c->broker && !c->scope_path && !c->scope_inline) {
		snprintf(why, whylen, "\"broker\" needs a \"scope\" to register");
		return -1;
	}
	c->mem_mib = (unsigned)mem;
	c->cpus = (unsigned)cpus;
	c->mem_limit_mib = (unsigned)limit;
	c->timeout_s = timeout;
	c->env = json_object_get(body, "env");
	return serve_env_check(c->env, SERVE_ENV_MAX, why, whylen);
}

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
			      "state", s->ended ? "ended" : "running", "pooled", s->pooled,
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

/* A new directory of our own under <state>/work. */
int serve_owned_work(char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/work/XXXXXX", serve.state);
	if (n < 0 || (size_t)n >= len || !mkdtemp(buf))
		return -1;
	return 0;
}

/* The `bulkhead start` option of the API's KEY ("--mem" for "mem_mib"), from the table of
 * request fields: the API and the CLI cannot name one field two ways. */
static char *start_flag(const char *key, char buf[32])
{
	const struct request_field *f = request_field_by_key(key);
	snprintf(buf, 32, "--%s", f && f->flag ? f->flag : key);
	return buf;
}

/* The `bulkhead start` options for a create (c NULL: a pool guest). Numbers go to num,
 * option names to flag. */
static void start_args(const struct serve_create *c, const char *scope, const char *work_spec,
		       char *const share[], char *args[], char num[3][16], char flag[10][32])
{
	size_t n = 0;
	if (!c) {
		if (serve.pool_image[0])
			args[n++] = start_flag("image", flag[0]), args[n++] = serve.pool_image;
		args[n++] = start_flag("work", flag[1]), args[n++] = (char *)work_spec;
		args[n] = NULL;
		return;
	}
	const char *keys[] = { "image", "scope", "vault", "ca_file", "broker", "audit" };
	const char *vals[] = { c->image, scope, c->vault, c->ca_file, c->broker, c->audit };
	for (size_t i = 0; i < 6; i++)
		if (vals[i])
			args[n++] = start_flag(keys[i], flag[i]), args[n++] = (char *)vals[i];
	const char *nkeys[] = { "mem_mib", "cpus", "mem_limit_mib" };
	unsigned nvals[] = { c->mem_mib, c->cpus, c->mem_limit_mib };
	for (size_t i = 0; i < 3; i++)
		if (nvals[i]) {
			snprintf(num[i], sizeof(num[i]), "%u", nvals[i]);
			args[n++] = start_flag(nkeys[i], flag[6 + i]), args[n++] = num[i];
		}
	for (size_t i = 0; share && share[i]; i++)
		args[n++] = share[i];
	args[n++] = start_flag("work", flag[9]), args[n++] = (char *)work_spec;
	args[n] = NULL;
}

/* Why a create cannot take a pool guest ("" : it can). */
static void pool_miss(const struct serve_create *c, char *why, size_t whylen)
{
	why[0] = '\0';
	if (!serve.pool_size || !c->pool)
		return;
	if (strcmp(c->image ? c->image : "", serve.pool_image))
		snprintf(why, whylen, "the pool boots %.40s%.40s",
			 serve.pool_image[0] ? "image " : "no image", serve.pool_image);
	else if (c->work)
		snprintf(why, whylen, "a host work directory is shared before boot");
	else if (c->scope_path || c->scope_inline)
		snprintf(why, whylen, "a scope's broker CA is installed at boot");
	else if (c->mem_mib || c->cpus || c->mem_limit_mib)
		snprintf(why, whylen, "memory and vCPUs are set at boot");
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

/* Boots a session cold (c NULL: a pool guest). 0, or -1 with why; s stays in the table,
 * ended, for the caller to clean up. */
int serve_boot(struct serve_session *s, const struct serve_create *c, char *why, size_t whylen)
{
	char spec[PATH_MAX + 4], *args[32 + 4 * SHARE_RULES_MAX], num[3][16], flag[10][32],
		**share = NULL;
	const char *scope = c ? c->scope_path : NULL;
	if (c && c->work) {
		snprintf(s->work, sizeof(s->work), "%s", c->work);
		s->work_ro = c->work_ro;
	} else if (serve_owned_work(s->work, sizeof(s->work)) < 0) {
		snprintf(why, whylen, "work directory under %s: %s", serve.state, strerror(errno));
		return -1;
	} else {
		s->work_owned = true;
	}
	snprintf(spec, sizeof(spec), "%s:%s", s->work, s->work_ro ? "ro" : "rw");
	if (c && c->scope_inline) {
		int n = snprintf(s->scope_file, sizeof(s->scope_file), "%s/scopes/XXXXXX",
				 serve.state);
		int fd = n > 0 && (size_t)n < sizeof(s->scope_file)
				 ? mkostemp(s->scope_file, O_CLOEXEC)
				 : -1;
		if (fd < 0 || json_dumpfd(c->scope_inline, fd, JSON_COMPACT) < 0) {
			snprintf(why, whylen, "scope file: %s", strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		scope = s->scope_file;
	}
	if (c) {
		snprintf(s->image, sizeof(s->image), "%s", c->image ? c->image : "");
		s->mem_mib = c->mem_mib ? c->mem_mib : s->mem_mib;
		s->cpus = c->cpus ? c->cpus : s->cpus;
		s->broker = c->broker ? "shared" : scope ? "private" : NULL;
	} else {
		snprintf(s->image, sizeof(s->image), "%s", serve.pool_image);
	}
	if (c && !(share = serve_share_args(c))) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	start_args(c, scope, spec, share, args, num, flag);
	int spawned = serve_spawn(s, args, why, whylen);
	serve_share_args_free(share);
	if (spawned < 0)
		return -1;
	if (s->broker && !strcmp(s->broker, "private")) {
		if (c->audit)
			snprintf(s->audit, sizeof(s->audit), "%s", c->audit);
		else if (broker_audit_path(s->id, s->audit, sizeof(s->audit)) < 0)
			s->audit[0] = '\0';
	}
	return 0;
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

struct serve_session *serve_create(const struct serve_create *c, const struct serve_peer *peer,
				   enum serve_err *err, char *why, size_t whylen)
{
	if (tenant_check(c, peer, why, whylen) < 0) {
		*err = SERVE_E_FORBIDDEN;
		return NULL;
	}
	double t0 = serve_wall();
	char miss[sizeof(((struct serve_session *)0)->pool_miss)];
	pool_miss(c, miss, sizeof(miss));
	struct serve_session *s = NULL;
	if (serve.pool_size && c->pool && !miss[0]) {
		pthread_mutex_lock(&serve.lock);
		s = serve_pool_take();
		pthread_cond_broadcast(&serve.changed); /* the pool refills */
		pthread_mutex_unlock(&serve.lock);
		if (!s)
			snprintf(miss, sizeof(miss), "the pool was empty");
	}
	if (!s) {
		s = serve_session_new();
		if (!s) {
			*err = SERVE_E_BUSY;
			snprintf(why, whylen, "at most %d sessions", SERVE_SESSIONS_MAX);
			return NULL;
		}
		snprintf(s->pool_miss, sizeof(s->pool_miss), "%s", serve.pool_size ? miss : "");
		if (serve_boot(s, c, why, whylen) < 0) {
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
