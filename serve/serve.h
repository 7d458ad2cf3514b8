/* SPDX-License-Identifier: Apache-2.0 */
/* serve/serve.h: `bulkhead serve` — the session API daemon (docs/API.md).
 *
 *   main.c      options, the socket, the main thread: reaps supervisors, ends sessions at
 *               their deadline, stops everything on TERM
 *   accept.c    our accept loop: each uid's share of connections
 *   http.c      libmicrohttpd's callbacks: peer check, bodies, the route table, the table of
 *               error kinds (serve_err.h) to statuses, JSON answers
 *   routes.c    a handler per route (http_internal.h between the two)
 *   create.c    a create request checked field by field
 *   sessions.c  the session table: create (cold or from the pool), get, list, delete
 *   boot.c      a cold boot: work directory, scope file, `bulkhead start`'s options
 *   spawn.c     one session's supervisor (`bulkhead start` run by us) and its records
 *   pool.c      the warm pool and its refill thread; bind.c a pool guest bound to the
 *               create's scope and broker when it is taken
 *   exec.c      a command in the guest, its stdin and signals; exec_stream.c its NDJSON
 *   files.c     files under a session's work directory; archive.c, archive_pack.c tar in
 *               and out
 *   events.c    the lifecycle event ring and its stream
 *
 * Threads: libmicrohttpd runs a thread per connection; the main thread reaps and times; the
 * pool thread boots. The session table is guarded by serve.lock; a session is freed only
 * when it is deleted and no request holds it (refs).
 *
 * Locks, the one order they are taken in (`make test-tsan` runs the suites under
 * ThreadSanitizer, which fails on a lock taken against it, and on any data race):
 *   1. serve.lock (sessions.c): the session table, the pool, the stop flag's writers;
 *   2. the event ring's lock (events.c): taken under serve.lock by serve_event().
 * Leaves, under which nothing else is taken: the exec registry (exec.c, reg_lock), an exec's
 * stdin_lock, the connection counts (accept.c). A wait that lets serve.lock go
 * (serve_session_stop, the pool's waits) holds the session it waits on (refs), or owns it
 * unlisted. */
#ifndef BULKHEAD_SERVE_SERVE_H
#define BULKHEAD_SERVE_SERVE_H

#include "image/image.h"
#include "serve/body.h"
#include "serve/serve_err.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SERVE_ALLOW_MAX	   16
#define SERVE_ENV_MAX	   64
#define SERVE_SESSIONS_MAX 256
#define SERVE_POOLS_MAX	   8
/* Connections open at once (serve/accept.c): in all; kept for administrators; per tenant
 * uid; per other uid, and all other uids together. */
#define SERVE_CONNS_MAX	      1000
#define SERVE_CONNS_ADMIN     100
#define SERVE_CONNS_TENANT    64
#define SERVE_CONNS_STRANGER  4
#define SERVE_CONNS_STRANGERS 16

struct serve_session {
	struct serve_session *next;
	char id[17];
	uid_t owner_uid;	      /* who created it (peer.c) */
	pid_t pid;		      /* the supervisor; 0 once reaped */
	unsigned long long pid_start; /* its start time (/proc/PID/stat), for records */
	bool ready;		      /* the guest answered: the session exists for clients */
	bool in_pool;		      /* booted ahead, not yet handed out */
	unsigned pool;		      /* ... by serve.pools[pool] */
	bool pooled;		      /* handed out from the pool */
	char pool_miss[96];	      /* why a cold boot though a pool exists */
	char image[128];	      /* "" : none */
	char work[PATH_MAX];	      /* the host directory at /work */
	bool work_ro, work_owned;     /* owned: made by us under --state, removed with it */
	const char *broker;	      /* "private", "shared" or NULL */
	char audit[PATH_MAX];	      /* "" : none */
	char scope_file[PATH_MAX];    /* an inline scope we wrote ("" : none) */
	unsigned mem_mib, cpus;
	double timeout_s;
	long long deadline_ms; /* CLOCK_MONOTONIC; 0: none */
	double created_at, ready_ms;
	char *env[SERVE_ENV_MAX + 1]; /* the session's own KEY=VALUE (malloc'd) */
	size_t nenv;
	char log[PATH_MAX]; /* the supervisor's stderr */
	/* What every exec needs, read from the run directory once it is ready (spawn.c): */
	char uds[108];			    /* the host's way to the guest (vsock.sock) */
	char cwd[PATH_MAX];		    /* where commands start */
	char *image_env_text;		    /* the image's environment, a line each (malloc'd) */
	char *image_env[IMAGE_ENV_MAX + 1]; /* ... split, NULL-terminated */
	/* the end */
	bool paused, pausing; /* POST .../pause and .../resume (routes.c) */
	bool ended, deleted, timed_out;
	int exit_code;
	char end_reason[16];
	char end_message[256];
	int refs; /* requests using it (exec, files) */
};

struct serve {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a session ended or became ready; the pool changed */
	struct serve_session *sessions;
	unsigned nsessions;
	/* configuration */
	char socket[PATH_MAX];
	char state[PATH_MAX];
	uid_t allow[SERVE_ALLOW_MAX];
	size_t nallow;
	char policy[PATH_MAX]; /* --policy, for every supervisor ("": the default) */
	bool template;	       /* --template: every supervisor restores a template */
	/* --pool, one per shape (pool.c); pool_size: all of them together */
	struct serve_pool {
		unsigned size;
		char image[128]; /* "": none */
		unsigned mem_mib, cpus;
		unsigned booting;
	} pools[SERVE_POOLS_MAX];
	unsigned npools, pool_size;
	int lifeline[2]; /* every supervisor holds [0]; only we hold [1] */
	/* Set once, under lock, by serve_stop_all; read without it too (the event streams hold
	 * their own lock), hence atomic. */
	_Atomic bool stopping;
};

extern struct serve serve;

/* peer.c: who is asking (SO_PEERCRED of the request's connection). */
struct serve_peer {
	uid_t uid;
	gid_t gid;
};
/* Root or the daemon's own uid: may do anything the daemon may. */
bool serve_peer_admin(const struct serve_peer *p);
/* An administrator, or the uid that created s. */
bool serve_peer_owns(const struct serve_peer *p, const struct serve_session *s);

/* Milliseconds on CLOCK_MONOTONIC, and Unix seconds as a double. */
long long serve_now_ms(void);
double serve_wall(void);

/* sessions.c */
struct serve_create {
	const char *image, *work, *scope_path, *vault, *ca_file, *broker, *audit;
	json_t *scope_inline;
	bool work_ro, pool;
	unsigned mem_mib, cpus, mem_limit_mib;
	double timeout_s;
	json_t *env;
	/* Inside the work directory (serve/share_args.c): borrowed from the body. */
	json_t *work_rules, *share_allow;
	const char *share_secrets;
};
/* Parses a create request's body into c (borrowing from body). 0, or -1 with why. */
int serve_create_parse(json_t *body, struct serve_create *c, char *why, size_t whylen);
/* share_args.c: "work_rules", "share_secrets", "share_secrets_allow" checked into c (0, or -1
 * with why). */
int serve_share_parse(json_t *body, struct serve_create *c, char *why, size_t whylen);
/* Creates a session for peer; returns it held (serve_session_put after), or NULL with
 * *err and why. */
struct serve_session *serve_create(const struct serve_create *c, const struct serve_peer *peer,
				   enum serve_err *err, char *why, size_t whylen);
/* Finds a ready session the peer owns and holds it, or NULL. */
struct serve_session *serve_session_get(const char *id, const struct serve_peer *peer);
void serve_session_put(struct serve_session *s);
/* The session as the API shows it (a new object). Call with serve.lock held. */
json_t *serve_session_json(const struct serve_session *s);
json_t *serve_sessions_json(const struct serve_peer *peer);
/* Stops and removes it; *out gets its last state. SERVE_OK, or SERVE_E_NOT_FOUND. */
enum serve_err serve_delete(const char *id, const struct serve_peer *peer, json_t **out);
/* Ends the session's supervisor (TERM, then KILL after 20 s) and waits until the main thread
 * has reaped it. Call with serve.lock held, never from the main thread; the lock is let go
 * while it waits, so the caller must hold the session (refs) or own it unlisted. */
void serve_session_stop(struct serve_session *s);
/* main thread: a supervisor ended with wait status st. */
void serve_reaped(pid_t pid, int st);
/* main thread: ends sessions past their deadline. */
void serve_tick(void);
/* The daemon's end: SIG to every supervisor; serve_all_ended says when the main thread has
 * reaped them all; serve_cleanup_all removes what they left. */
void serve_stop_all(int sig);
bool serve_all_ended(void);
void serve_cleanup_all(void);
/* A new session in the table, not ready (invisible to clients); NULL at the limit. */
struct serve_session *serve_session_new(void);
/* Boots s cold for c, or (c NULL) as a guest of pool. 0, or -1 with why (s ended, still in
 * the table). */
int serve_boot(struct serve_session *s, const struct serve_create *c, const struct serve_pool *pool,
	       char *why, size_t whylen);
/* An inline scope as a file of ours under <state>/scopes, named in s->scope_file. 0, or -1
 * with why. */
int serve_scope_write(struct serve_session *s, json_t *scope, char *why, size_t whylen);
/* bind.c: binds a guest taken from the pool to the create's scope and broker (s not ready,
 * ours alone). 0, with s->broker and s->audit set and the scope's digest in sha256; or, with
 * why, -1 (refused: the create is refused) or -2 (the guest could not take a binding: another
 * boot may serve). Either way the guest is unbound, and the caller discards it. */
int serve_bind(struct serve_session *s, const struct serve_create *c, char sha256[65], char *why,
	       size_t whylen);
/* A new directory of ours under <state>/work. */
int serve_owned_work(char *buf, size_t len);
/* Checks an "env" object. 0, or -1 with why. */
int serve_env_check(json_t *env, size_t max, char *why, size_t whylen);
/* Removes a work directory of ours (lib/tree_remove.h: no link followed, no mount crossed),
 * saying on stderr what it could not. */
void serve_rmtree(const char *path);
/* The supervisor's last line of stderr (spawn.c). */
void serve_session_last_line(const struct serve_session *s, char *why, size_t whylen);
/* Removes what a session left: its run directory and cgroups, our files, its record. */
void serve_session_cleanup(struct serve_session *s);
void serve_session_free(struct serve_session *s);

/* spawn.c */
/* Starts a supervisor for args (`bulkhead start` options) with stdin_fd as its stdin (-1:
 * /dev/null); waits until the guest is ready. s->id, pid, log are set. 0, or -1 with why (the
 * supervisor's own words). The session must be in the table (not ready) so that the reaper
 * can mark its end. */
int serve_spawn(struct serve_session *s, char *const args[], int stdin_fd, char *why,
		size_t whylen);
/* Writes, and removes, the record a restarted daemon reads. */
void serve_record_put(const struct serve_session *s);
void serve_record_remove(const char *id);
/* At start: stops what a previous daemon left (its records). */
void serve_records_recover(void);
/* ... then removes what no record names (a create or boot cut short by a KILL). */
void serve_records_sweep(void);

/* pool.c */
#define POOL_NICE 10
/* Every thread of the session (its supervisor's, its cgroups') at nice n (root only). */
void serve_pool_renice(const struct serve_session *s, int n);
/* --pool N[:IMAGE][:mem=MIB][:cpus=N] into serve.pools; 0, or -1 (malformed, a shape given
 * twice, too many). */
int serve_pool_parse(const char *arg);
int serve_pool_start(void);
/* The pool whose shape c asks for (image, memory, vCPUs), or -1 with why. */
int serve_pool_find(const struct serve_create *c, char *why, size_t whylen);
/* Takes a ready guest of pool i, or NULL (empty). serve.lock held. */
struct serve_session *serve_pool_take(unsigned i);
json_t *serve_pool_json(void);

/* events.c */
/* Records an event (extra: more fields, stolen). May be called with serve.lock held. */
void serve_event(const char *type, const struct serve_session *s, json_t *extra);
/* The event stream: those after seq since (-1: only those still to come). SERVE_OK with
 * *body, or SERVE_E_INTERNAL (out of memory). */
enum serve_err serve_events_body(long long since, int client_fd, const struct serve_peer *peer,
				 struct serve_body *body);
void serve_events_poll_approvals(void);

/* exec.c */
/* Starts the command body asks for in s (taken: let go with the exec) and makes its NDJSON
 * stream; client_fd is watched so that a client that goes away ends the command. SERVE_OK
 * with *out, or why. */
enum serve_err serve_exec_body(struct serve_session *s, json_t *body, int client_fd,
			       struct serve_body *out, char *why, size_t whylen);
/* Writes to an exec's stdin (stdin_open), then closes it when eof. SERVE_OK, or why. */
enum serve_err serve_exec_stdin(const char *id, const struct serve_peer *peer, const char *data,
				size_t len, bool eof, char *why, size_t whylen);
/* Runs argv in session id with its output dropped; its status, or -1 (failed or over
 * timeout_ms). The pool's warm-up. */
int serve_exec_quiet(const struct serve_session *s, char *const argv[], int timeout_ms);
/* A signal ('s', a = number) or window size ('w', a rows, b cols) for an exec. SERVE_OK, or
 * why. */
enum serve_err serve_exec_control(const char *id, const struct serve_peer *peer, int kind, int a,
				  int b, char *why, size_t whylen);

/* files.c: see files.h for the upload state */

/* http.c (with accept.c and routes.c: the HTTP front, serve/http_internal.h) */
int serve_http_start(int listen_fd);
void serve_http_stop(void);

#endif
