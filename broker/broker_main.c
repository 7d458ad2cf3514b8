/* SPDX-License-Identifier: Apache-2.0 */
/* broker/broker_main.c: bulkhead-broker — one session's broker (a socket and a rules file), or
 * the shared broker that sessions register with over its control socket (broker/control.c).
 * Options are parsed in broker_cmdline.c; here: load, lock down, serve. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "broker/approvals.h"
#include "broker/broker_cmdline.h"
#include "broker/control.h"
#include "broker/harden.h"
#include "broker/policy.h"
#include "broker/proxy.h"
#include "broker/session.h"
#include "broker/rules.h"
#include "broker/upstream_tls.h"
#include "broker/cred.h"
#include "broker/cred_source.h"
#include "broker/token_cache.h"
#include "broker/vault_live.h"
#include "broker/mitm_ca.h"
#include "lib/io.h"
#include "lib/unix_listen.h"

/* How long a worker keeps a silent connection before the loop takes it back: long enough
 * that a client sending its next request at once never waits on the loop, short enough that
 * idle connections hold no thread. */
#define LINGER_MS 50

/* --secrets-file: a development and test source (JSON object name -> string), refused unless
 * it is a regular file only its owner can read. The vault replaces it. */
static json_t *secrets_json;

static int file_secret_get(void *arg, const struct rules_secret *s, int flags, uint8_t **val,
			   size_t *len, int64_t *until_ms, char *why, size_t whylen)
{
	json_t *v = json_object_get(secrets_json, s->name);

	(void)arg;
	(void)flags;
	(void)until_ms;
	(void)why;
	(void)whylen;
	if (!json_is_string(v))
		return -ENOENT;
	*len = json_string_length(v);
	*val = malloc(*len + 1);
	if (!*val)
		return -ENOMEM;
	memcpy(*val, json_string_value(v), *len);
	return 0;
}

static int load_secrets_file(const char *path)
{
	json_error_t je;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "bulkhead-broker: cannot open --secrets-file %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid()) {
		fprintf(stderr,
			"bulkhead-broker: --secrets-file %s must be a regular file owned by you "
			"with mode 0600 (chmod 600 %s)\n",
			path, path);
		close(fd);
		return -1;
	}
	secrets_json = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	close(fd);
	if (!json_is_object(secrets_json)) {
		fprintf(stderr, "bulkhead-broker: --secrets-file %s: line %d: %s\n", path, je.line,
			secrets_json ? "must be a JSON object of name: value" : je.text);
		return -1;
	}
	return 0;
}

/* --vault: the real source, kept current (vault_live.h). The value is copied out of the
 * vault's locked page into the buffer the proxy wipes and frees after use. */
static struct vault_live *vault;

static int open_vault(const char *path, const char *key_file)
{
	char err[512] = "", keybuf[4096];
	if (!key_file) {
		if (snprintf(keybuf, sizeof(keybuf), "%s.key", path) >= (int)sizeof(keybuf))
			return -1;
		key_file = keybuf;
	}
	if (vault_live_open(path, key_file, &vault, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return -1;
	}
	return 0;
}

/* A one-session broker's control socket: approvals only. */
struct control_args {
	const char *path;
	const struct broker_common *common;
};

static void *control_thread_main(void *arg)
{
	const struct control_args *a = arg;
	char err[512];

	control_serve(a->path, a->common, NULL, 0, err, sizeof(err));
	fprintf(stderr, "bulkhead-broker: %s\n", err);
	exit(1);
}

/* Every guest connection costs descriptors (its socket, a copy for revocation, the upstream's):
 * at the usual soft limit of 1024, one session's idle connections would stop the broker
 * serving every other session. The hard limit is ours to take. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		fprintf(stderr, "bulkhead-broker: cannot raise the open file limit to %llu: %s\n",
			(unsigned long long)rl.rlim_max, strerror(errno));
}

/* A late-bound session (--session-ca-fd): its CA from the descriptor (closed after), and the
 * digest of its rules file. */
static struct broker_bind late_bind;
static int load_bind(const struct broker_cmdline *o)
{
	char *end, *text;
	long fd = strtol(o->session_ca_fd, &end, 10);

	if (*end || end == o->session_ca_fd || fd < 3 || fd > 1024) {
		fprintf(stderr, "bulkhead-broker: --session-ca-fd: a descriptor number above 2\n");
		return 1;
	}
	late_bind.ca_pem = io_read_all((int)fd, 16 << 10, NULL);
	close((int)fd);
	text = io_read_path(o->rules_path, (1 << 20) - 1, NULL);
	if (!late_bind.ca_pem || !text || rules_digest(text, late_bind.scope_sha256) < 0) {
		fprintf(stderr, "bulkhead-broker: --session-ca-fd: %s\n",
			!late_bind.ca_pem ? "cannot read the session CA"
					  : "the rules are not JSON");
		free(text);
		return 1;
	}
	free(text);
	return 0;
}

/* Everything a session's requests read, loaded before the lock-down: the policy, the scope
 * (checked against the policy), approvals, the secrets' source, upstream TLS. Returns 0, or
 * the exit status after one line on stderr. */
static int load(const struct broker_cmdline *o, struct broker_common *common, struct rules *rules)
{
	static struct policy policy;
	static struct secret_source src = { .get = file_secret_get };
	static struct hold_budget hold_total, buf_total, h2_total;
	char err[512];

	raise_nofile();
	if (o->policy_path) {
		if (policy_load_file(&policy, o->policy_path, err, sizeof(err))) {
			fprintf(stderr, "bulkhead-broker: policy: %s\n", err);
			return 1;
		}
		common->policy = &policy;
	}
	if (o->session_ca_fd && load_bind(o))
		return 1;
	if (o->rules_path && rules_load_file(rules, o->rules_path, err, sizeof(err))) {
		fprintf(stderr, "bulkhead-broker: rules: %s\n", err);
		return 1;
	}
	if (o->rules_path && policy_check_scope(common->policy, rules, err, sizeof(err))) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	common->approvals = approvals_new();
	if (!common->approvals) {
		fprintf(stderr, "bulkhead-broker: out of memory\n");
		return 1;
	}
	if (o->secrets_path && load_secrets_file(o->secrets_path))
		return 1;
	if (o->vault_path && open_vault(o->vault_path, o->key_file))
		return 1;
	common->tls = tlsup_ctx_new(o->ca, err, sizeof(err));
	if (!common->tls) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	if (vault) {
		/* Token documents are parsed with jansson: every buffer it frees is wiped. */
		cred_json_wipe_on_free();
		struct token_cache_cfg tcfg = {
			.tls = common->tls,
			.policy = common->policy,
			.vault = vault,
			.timeout_ms = o->io_timeout_s < 10 ? (int)o->io_timeout_s * 1000 : 10000,
		};
		if (asprintf(&tcfg.state_path, "%s.state", o->vault_path) < 0) {
			fprintf(stderr, "bulkhead-broker: out of memory\n");
			return 1;
		}
		token_cache_init(&tcfg);
	}
	common->secrets = vault ? cred_source_vault(vault) : o->secrets_path ? &src : NULL;
	common->io_timeout_ms = (int)o->io_timeout_s * 1000;
	common->head_timeout_ms = (int)o->head_timeout_s * 1000;
	common->stream_idle_ms = (int)o->stream_idle_s * 1000;
	struct loop_limits lim = {
		.max_total = (unsigned)o->max_conns_total,
		.max_session = (unsigned)o->max_conns,
		.max_active = (unsigned)o->max_active,
		.idle_timeout_ms = (int)o->idle_timeout_s * 1000,
		/* A request's head has this long in all; waiting for a worker is part of it. */
		.wait_timeout_ms = (int)o->head_timeout_s * 1000,
		.linger_ms = LINGER_MS,
	};
	enum loop_kind kind = strcmp(o->event_loop, "uring") == 0   ? LOOP_URING
			      : strcmp(o->event_loop, "epoll") == 0 ? LOOP_EPOLL
								    : LOOP_AUTO;
	/* Made now: the lock-down forbids making an io_uring. */
	common->loop = loop_new(kind, &lim, err, sizeof(err));
	if (!common->loop) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	hold_budget_init(&hold_total, o->hold_total_bytes, o->hold_total_reqs);
	common->hold_total = &hold_total;
	hold_budget_init(&buf_total, o->buf_total_bytes, SIZE_MAX);
	common->buf_total = &buf_total;
	hold_budget_init(&h2_total, SIZE_MAX, H2_STREAMS_TOTAL);
	common->h2_total = &h2_total;
	common->buf_session_bytes = o->buf_session_bytes;
	common->audit_quota = o->audit_quota;
	common->hold_session_bytes = o->hold_session_bytes;
	common->hold_session_reqs = o->hold_session_reqs;
	common->connect_timeout_ms = 5000;
	common->log = !o->quiet;
	return 0;
}

/* Everything is loaded: lock down before the first guest byte or control request. */
static int lock_down(const struct broker_cmdline *o)
{
	int rc;

	signal(SIGPIPE, SIG_IGN);
	rc = harden_lock_down();
	if (rc) {
		fprintf(stderr, "bulkhead-broker: lock-down (seccomp): %s\n", strerror(-rc));
		return 1;
	}
	if (o->selftest) {
		fprintf(stderr, "selftest: locked down; calling fork, which is denied\n");
		fork();
		fprintf(stderr, "selftest: still alive after fork\n");
		return 1;
	}
	return 0;
}

/* One session's broker: its socket, its threads, and (optional) a control socket for
 * `bulkhead approvals`. Returns only on a failure, with the exit status. */
static int serve_session(const struct broker_cmdline *o, const struct broker_common *common,
			 struct rules *rules)
{
	char err[512];
	int lfd = o->listen_fd ? unix_listen_adopt(o->listen_fd, false)
			       : unix_listen(o->listen_path, 512, false);

	if (lfd < 0) {
		fprintf(stderr, "bulkhead-broker: cannot listen on %s: %s%s\n",
			o->listen_fd ? "--listen-fd" : o->listen_path, strerror(-lfd),
			o->listen_fd ? "" : " (remove a stale socket or pick another path)");
		return 1;
	}
	if (!broker_session_start(common, o->session, rules, lfd, o->audit_path,
				  late_bind.ca_pem ? &late_bind : NULL, err, sizeof(err))) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	mitm_ca_pem_free((char *)late_bind.ca_pem); /* the session holds the key now */
	late_bind.ca_pem = NULL;
	fprintf(stderr, "bulkhead-broker: listening on %s\n",
		o->listen_path ? o->listen_path : "the given descriptor");
	if (o->control) {
		static struct control_args cargs;
		pthread_t t;

		cargs = (struct control_args){ o->control, common };
		if (pthread_create(&t, NULL, control_thread_main, &cargs)) {
			fprintf(stderr, "bulkhead-broker: cannot start the control thread\n");
			return 1;
		}
	}
	/* The session's threads serve until TERM or INT (blocked in every thread since main
	 * began): then what was obtained for the session alone is revoked, and the signal ends the
	 * process as it would have. */
	sigset_t ends;
	int sig = SIGTERM;

	sigemptyset(&ends);
	sigaddset(&ends, SIGTERM);
	sigaddset(&ends, SIGINT);
	while (sigwait(&ends, &sig))
		;
	if (common->secrets && common->secrets->session_end)
		common->secrets->session_end(common->secrets->arg, rules);
	signal(sig, SIG_DFL);
	pthread_sigmask(SIG_UNBLOCK, &ends, NULL);
	raise(sig);
	return 1;
}

int main(int argc, char **argv)
{
	static struct rules rules;
	static struct broker_common common;
	struct broker_cmdline o;
	char err[512];
	int rc = broker_cmdline_parse(argc, argv, &o);

	if (rc >= 0)
		return rc;
	/* Workers come and go by the hundred: glibc would give each a heap arena of its own and
	 * keep their memory after they end. A few arenas shared serve the broker as well. */
	mallopt(M_ARENA_MAX, 4);
	/* TERM and INT wait for the main thread (serve_session); every thread made from here on
	 * inherits the mask. */
	sigset_t ends;

	sigemptyset(&ends);
	sigaddset(&ends, SIGTERM);
	sigaddset(&ends, SIGINT);
	if (!o.control || o.rules_path)
		pthread_sigmask(SIG_BLOCK, &ends, NULL);
	rc = load(&o, &common, &rules);
	if (!rc)
		rc = lock_down(&o);
	if (!rc && (rc = loop_start(common.loop)) != 0) {
		fprintf(stderr, "bulkhead-broker: cannot start the event loop: %s\n",
			strerror(-rc));
		rc = 1;
	}
	if (rc)
		return rc;
	const char *why = loop_fallback_why(common.loop);
	fprintf(stderr,
		"bulkhead-broker: event loop: %s%s%s%s; at most %u connections (%u served at "
		"once), "
		"%ld per session (%ld served at once), idle %ld s, streams silent %ld s\n",
		loop_backend_name(common.loop), why[0] ? " (io_uring unavailable: " : "", why,
		why[0] ? ")" : "", loop_limits(common.loop)->max_total,
		loop_limits(common.loop)->max_active_total, o.max_conns, o.max_active,
		o.idle_timeout_s, o.stream_idle_s);
	if (o.control && !o.rules_path) {
		/* The shared broker: sessions register over the control socket. */
		control_serve(o.control, &common, o.audit_dir, 1, err, sizeof(err));
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	return serve_session(&o, &common, &rules);
}
