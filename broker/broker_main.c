/* broker/broker_main.c: bulkhead-broker — one session's broker (a socket and a rules file), or
 * the shared broker that sessions register with over its control socket (broker/control.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "broker/approvals.h"
#include "broker/control.h"
#include "broker/harden.h"
#include "broker/policy.h"
#include "broker/proxy.h"
#include "broker/session.h"
#include "broker/rules.h"
#include "broker/upstream_tls.h"
#include "broker/vault.h"
#include "lib/unix_listen.h"

/* --secrets-file: a development and test source (JSON object name -> string), refused unless
 * it is a regular file only its owner can read. The vault replaces it. */
static json_t *secrets_json;

static int file_secret_get(void *arg, const char *name, uint8_t **val, size_t *len)
{
	json_t *v = json_object_get(secrets_json, name);

	(void)arg;
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

/* --vault: the real source. The value is copied out of the vault's locked page
 * into the buffer the proxy wipes and frees after use. */
static struct vault *vault;

static int vault_secret_get(void *arg, const char *name, uint8_t **val, size_t *len)
{
	unsigned char *locked;
	size_t n;
	(void)arg;
	int rc = vault_get(vault, name, &locked, &n);
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

static int open_vault(const char *path, const char *key_file)
{
	char err[512], keybuf[4096];
	struct vault_cred *cred = NULL;
	if (!key_file) {
		if (snprintf(keybuf, sizeof(keybuf), "%s.key", path) >= (int)sizeof(keybuf))
			return -1;
		key_file = keybuf;
	}
	if (vault_cred_load(VAULT_CRED_KEY_FILE, key_file, &cred, err, sizeof(err)) < 0 ||
	    vault_open(path, cred, VAULT_RDONLY, &vault, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		vault_cred_free(cred);
		return -1;
	}
	vault_cred_free(cred);
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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bulkhead-broker --listen PATH|--listen-fd N --rules FILE [options]\n"
		"       bulkhead-broker --control PATH [--audit-dir DIR] [options]\n"
		"One session (the first form, as `bulkhead run` starts a private broker):\n"
		"  --listen PATH        Unix socket the guest's connections arrive on\n"
		"  --listen-fd N        or: a socket the launcher already listens on\n"
		"  --rules FILE         the session's scope: injection rules and allow-list "
		"(JSON)\n"
		"  --audit FILE         append one hash-chained JSON line per request\n"
		"  --session ID         the session named in audit records\n"
		"  --control PATH       (optional) where `bulkhead approvals` reaches it\n"
		"A shared broker (sessions register over the control socket, broker/control.h):\n"
		"  --control PATH       the control socket (mode 0600; your user and root only)\n"
		"  --audit-dir DIR      one audit log per session: DIR/<session>.log\n"
		"Both:\n"
		"  --vault FILE         secrets from this vault (bulkhead vault)\n"
		"  --key-file FILE      its key file (default: the vault's path + \".key\")\n"
		"  --secrets-file FILE  development/test secrets: JSON {name: value}, mode 0600\n"
		"  --ca-file FILE       trust only this CA for upstreams (default: system)\n"
		"  --policy FILE        the global policy (JSON; policy.h): denials that no scope\n"
		"                       can lift, rules that hold requests for approval\n"
		"  --io-timeout S       seconds either side of a connection may stay silent "
		"(default 30)\n"
		"  --quiet              no per-request log lines\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "rules", required_argument, NULL, 'r' },
		{ "secrets-file", required_argument, NULL, 's' },
		{ "listen-fd", required_argument, NULL, 'f' },
		{ "vault", required_argument, NULL, 'v' },
		{ "audit", required_argument, NULL, 'a' },
		{ "audit-dir", required_argument, NULL, 'A' },
		{ "control", required_argument, NULL, 'C' },
		{ "session", required_argument, NULL, 'S' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "ca-file", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "io-timeout", required_argument, NULL, 't' },
		{ "policy", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ "harden-selftest", no_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	static struct rules rules;
	static struct secret_source src = { file_secret_get, NULL };
	static struct secret_source vsrc = { vault_secret_get, NULL };
	static struct broker_common common = { .log = 1 };
	const char *listen_path = NULL, *rules_path = NULL, *secrets_path = NULL, *ca = NULL;
	const char *vault_path = NULL, *key_file = NULL, *audit_path = NULL, *session = "-";
	const char *listen_fd = NULL, *control = NULL, *audit_dir = NULL, *policy_path = NULL;
	static struct policy policy;
	char err[512];
	int o, lfd, selftest = 0;
	long io_timeout_s = 30;
	char *end;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'l':
			listen_path = optarg;
			break;
		case 'r':
			rules_path = optarg;
			break;
		case 's':
			secrets_path = optarg;
			break;
		case 'f':
			listen_fd = optarg; /* checked below */
			break;
		case 'v':
			vault_path = optarg;
			break;
		case 'a':
			audit_path = optarg;
			break;
		case 'A':
			audit_dir = optarg;
			break;
		case 'C':
			control = optarg;
			break;
		case 'S':
			session = optarg;
			break;
		case 'k':
			key_file = optarg;
			break;
		case 'c':
			ca = optarg;
			break;
		case 'q':
			common.log = 0;
			break;
		case 't':
			io_timeout_s = strtol(optarg, &end, 10);
			if (*end || end == optarg || io_timeout_s < 1 || io_timeout_s > 3600) {
				fprintf(stderr,
					"bulkhead-broker: --io-timeout: 1 to 3600 seconds\n");
				return 2;
			}
			break;
		case 'P':
			policy_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'T':
			selftest = 1; /* test hook: lock down, then try to start a process */
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (vault_path && secrets_path) ||
	    (!listen_path && !listen_fd ? !control || rules_path || audit_path
					: (listen_path && listen_fd) || !rules_path || audit_dir)) {
		usage(stderr);
		return 2;
	}
	if (!control && strcmp(session, "-") && !broker_session_id_ok(session)) {
		fprintf(stderr, "bulkhead-broker: --session: 1 to %d of A-Z a-z 0-9 _ -\n",
			BROKER_SESSION_ID_MAX);
		return 2;
	}
	if (policy_path) {
		if (policy_load_file(&policy, policy_path, err, sizeof(err))) {
			fprintf(stderr, "bulkhead-broker: policy: %s\n", err);
			return 1;
		}
		common.policy = &policy;
	}
	if (rules_path && rules_load_file(&rules, rules_path, err, sizeof(err))) {
		fprintf(stderr, "bulkhead-broker: rules: %s\n", err);
		return 1;
	}
	if (rules_path && policy_check_scope(common.policy, &rules, err, sizeof(err))) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	common.approvals = approvals_new();
	if (!common.approvals) {
		fprintf(stderr, "bulkhead-broker: out of memory\n");
		return 1;
	}
	if (secrets_path && load_secrets_file(secrets_path))
		return 1;
	if (vault_path && open_vault(vault_path, key_file))
		return 1;
	common.tls = tlsup_ctx_new(ca, err, sizeof(err));
	if (!common.tls) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	common.secrets = vault_path ? &vsrc : secrets_path ? &src : NULL;
	common.io_timeout_ms = (int)io_timeout_s * 1000;
	common.connect_timeout_ms = 5000;
	signal(SIGPIPE, SIG_IGN);
	/* Everything is loaded: lock down before the first guest byte or control request. */
	int hrc = harden_lock_down();
	if (hrc) {
		fprintf(stderr, "bulkhead-broker: lock-down (seccomp): %s\n", strerror(-hrc));
		return 1;
	}
	if (selftest) {
		fprintf(stderr, "selftest: locked down; calling fork, which is denied\n");
		fork();
		fprintf(stderr, "selftest: still alive after fork\n");
		return 1;
	}
	if (control && !rules_path) {
		control_serve(control, &common, audit_dir, 1, err, sizeof(err));
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	lfd = listen_fd ? unix_listen_adopt(listen_fd, false)
			: unix_listen(listen_path, 512, false);
	if (lfd < 0) {
		fprintf(stderr, "bulkhead-broker: cannot listen on %s: %s%s\n",
			listen_fd ? "--listen-fd" : listen_path, strerror(-lfd),
			listen_fd ? "" : " (remove a stale socket or pick another path)");
		return 1;
	}
	if (!broker_session_start(&common, session, &rules, lfd, audit_path, err, sizeof(err))) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	fprintf(stderr, "bulkhead-broker: listening on %s\n",
		listen_path ? listen_path : "the given descriptor");
	if (control) {
		static struct control_args cargs;
		pthread_t t;

		cargs = (struct control_args){ control, &common };
		if (pthread_create(&t, NULL, control_thread_main, &cargs)) {
			fprintf(stderr, "bulkhead-broker: cannot start the control thread\n");
			return 1;
		}
	}
	for (;;)
		pause(); /* the session's threads serve; a signal ends the process */
}
