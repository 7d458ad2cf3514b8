/* broker/broker_main.c: bulkhead-broker — serves forward-proxy connections arriving on one Unix
 * socket (a session's vsock port), one thread per connection, with rules from a JSON file. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "broker/mitm_ca.h"
#include "broker/proxy.h"
#include "broker/rules.h"
#include "broker/upstream_tls.h"
#include "broker/vault.h"
#include "lib/unix_listen.h"

/* Past this many open guest connections new ones are closed at once: a guest that opens
 * sockets without end exhausts only its own share. */
#define BROKER_MAX_CONNS 1024
/* The session CA outlives any session a scope allows (issue 7 bounds session lifetime). */
#define BROKER_CA_LIFETIME_S (7L * 24 * 3600)

static struct proxy_config cfg;
static atomic_int open_conns;

struct job {
	int fd;
	unsigned long id;
};

static void *conn_thread(void *arg)
{
	struct job j = *(struct job *)arg;

	free(arg);
	proxy_serve(&cfg, j.fd, j.id);
	atomic_fetch_sub(&open_conns, 1);
	return NULL;
}

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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bulkhead-broker --listen PATH --rules FILE [--secrets-file FILE] "
		"[--ca-file FILE] [--quiet]\n"
		"  --listen PATH        Unix socket the guest's connections arrive on\n"
		"  --rules FILE         injection rules and allow-list (JSON)\n"
		"  --listen-fd N        or: a socket the launcher already listens on\n"
		"  --vault FILE         secrets from this vault (bulkhead vault)\n"
		"  --key-file FILE      its key file (default: the vault's path + \".key\")\n"
		"  --secrets-file FILE  development/test secrets: JSON {name: value}, mode 0600\n"
		"  --ca-file FILE       trust only this CA for upstreams (default: system)\n"
		"  --audit FILE         append one hash-chained JSON line per request\n"
		"  --session ID         the session named in audit records\n"
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
		{ "session", required_argument, NULL, 'S' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "ca-file", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct rules rules;
	static struct secret_source src = { file_secret_get, NULL };
	const char *listen_path = NULL, *rules_path = NULL, *secrets_path = NULL, *ca = NULL;
	const char *vault_path = NULL, *key_file = NULL, *audit_path = NULL, *session = "-";
	static pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;
	const char *listen_fd = NULL;
	static struct secret_source vsrc = { vault_secret_get, NULL };
	char err[512];
	pthread_attr_t attr;
	unsigned long next_id = 1;
	int o, lfd;

	cfg.log = 1;
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
			cfg.log = 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if ((!listen_path) == (!listen_fd) || !rules_path || optind != argc ||
	    (vault_path && secrets_path)) {
		usage(stderr);
		return 2;
	}
	if (rules_load_file(&rules, rules_path, err, sizeof(err))) {
		fprintf(stderr, "bulkhead-broker: rules: %s\n", err);
		return 1;
	}
	if (secrets_path && load_secrets_file(secrets_path))
		return 1;
	if (vault_path && open_vault(vault_path, key_file))
		return 1;
	if (audit_path && audit_open(audit_path, &cfg.audit, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	cfg.audit_lock = &audit_lock;
	cfg.session = session;
	cfg.tls = tlsup_ctx_new(ca, err, sizeof(err));
	if (!cfg.tls) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	/* The session CA for CONNECT: made here, never written anywhere; the guest fetches
	 * its certificate through the proxy and trusts nothing else. */
	cfg.mitm = mitm_ca_new(session, BROKER_CA_LIFETIME_S, err, sizeof(err));
	if (!cfg.mitm) {
		fprintf(stderr, "bulkhead-broker: %s\n", err);
		return 1;
	}
	cfg.rules = &rules;
	cfg.secrets = vault_path ? &vsrc : secrets_path ? &src : NULL;
	cfg.io_timeout_ms = 30000;
	cfg.connect_timeout_ms = 5000;
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_fd ? unix_listen_adopt(listen_fd, false)
			: unix_listen(listen_path, 512, false);
	if (lfd < 0) {
		fprintf(stderr, "bulkhead-broker: cannot listen on %s: %s%s\n",
			listen_fd ? "--listen-fd" : listen_path, strerror(-lfd),
			listen_fd ? "" : " (remove a stale socket or pick another path)");
		return 1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	fprintf(stderr, "bulkhead-broker: listening on %s\n",
		listen_path ? listen_path : "the given descriptor");
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		struct job *j;
		pthread_t t;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* Out of descriptors or memory: wait rather than spin. */
			usleep(10000);
			continue;
		}
		if (atomic_fetch_add(&open_conns, 1) >= BROKER_MAX_CONNS) {
			atomic_fetch_sub(&open_conns, 1);
			close(fd);
			continue;
		}
		j = malloc(sizeof(*j));
		if (!j ||
		    (j->fd = fd, j->id = next_id++, pthread_create(&t, &attr, conn_thread, j))) {
			free(j);
			close(fd);
			atomic_fetch_sub(&open_conns, 1);
		}
	}
}
