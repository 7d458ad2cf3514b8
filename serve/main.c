/* SPDX-License-Identifier: Apache-2.0 */
/* serve/main.c: `bulkhead serve` (bulkhead-serve) — its options, its state directory, its
 * socket, and the main thread: it reaps every session's supervisor (all our children are
 * supervisors), ends sessions at their deadline, watches for approvals, and on TERM or INT
 * stops every session before it exits. */
#include "session/rundir.h"

#include "lib/mono.h"
#include "lib/mkdirs.h"
#include "lib/unix_listen.h"
#include "serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STOP_WAIT_MS 20000

struct serve serve = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.changed = PTHREAD_COND_INITIALIZER,
	.lifeline = { -1, -1 },
};

static const char usage[] =
	"usage: bulkhead serve [--socket PATH] [--pool N[:IMAGE]] [--state DIR]\n"
	"                      [--allow-uid UID]... [--template]\n"
	"The session API daemon (docs/API.md): HTTP/1.1 + JSON on a Unix socket.\n"
	"  --socket PATH     where to listen (default: <run dir>/serve.sock, mode 0600)\n"
	"  --pool N[:IMAGE][:mem=MIB][:cpus=N]\n"
	"                    keep N guests booted ahead of that shape (default: none; no\n"
	"                    image, 256 MiB, 1 vCPU); repeatable, one per shape\n"
	"  --state DIR       the daemon's files (default /var/lib/bulkhead/serve as root, else\n"
	"                    ${XDG_STATE_HOME:-~/.local/state}/bulkhead/serve)\n"
	"  --allow-uid UID   let UID use the API too (only ours and root's by default)\n"
	"  --policy FILE     the global policy of every session (default\n"
	"                    /etc/bulkhead/policy.json when it exists)\n"
	"  --template        start every session, pool guests included, by restoring a\n"
	"                    template of its shape (kvm engine; 'bulkhead run --template')\n"
	"Sessions end with the daemon; one that was killed stops what it left when it starts.\n";

long long serve_now_ms(void)
{
	return mono_ms();
}

double serve_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "pool", required_argument, NULL, 'p' },
		{ "state", required_argument, NULL, 'd' },
		{ "allow-uid", required_argument, NULL, 'u' },
		{ "policy", required_argument, NULL, 'P' },
		{ "template", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		char *end = NULL;
		long uid;
		switch (ch) {
		case 's':
		case 'd':
			if (optarg[0] != '/' || strlen(optarg) >= 100 - 16) {
				fprintf(stderr,
					"bulkhead serve: --%s needs an absolute path "
					"shorter than 84 bytes\n",
					ch == 's' ? "socket" : "state");
				return 2;
			}
			snprintf(ch == 's' ? serve.socket : serve.state, PATH_MAX, "%s", optarg);
			break;
		case 'p':
			if (serve_pool_parse(optarg) < 0) {
				fprintf(stderr,
					"bulkhead serve: --pool N[:IMAGE][:mem=MIB][:cpus=N]: N "
					"from 0 to 64, one --pool per shape, at most %d\n",
					SERVE_POOLS_MAX);
				return 2;
			}
			break;
		case 'T':
			serve.template = true;
			break;
		case 'P':
			if (optarg[0] != '/' || strlen(optarg) >= sizeof(serve.policy) ||
			    access(optarg, R_OK) < 0) {
				fprintf(stderr,
					"bulkhead serve: --policy needs an absolute path to a file "
					"we can read\n");
				return 2;
			}
			snprintf(serve.policy, sizeof(serve.policy), "%s", optarg);
			break;
		case 'u':
			uid = strtol(optarg, &end, 10);
			if (!*optarg || *end || uid < 0 || uid > 0x7fffffff ||
			    serve.nallow == SERVE_ALLOW_MAX) {
				fprintf(stderr,
					"bulkhead serve: --allow-uid takes a number (at most "
					"%d of them)\n",
					SERVE_ALLOW_MAX);
				return 2;
			}
			serve.allow[serve.nallow++] = (uid_t)uid;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "bulkhead serve: bad option '%s' (see --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "bulkhead serve: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return -1;
}

static int defaults(void)
{
	char base[PATH_MAX];
	if (!serve.socket[0]) {
		if (rundir_base(base, sizeof(base)) < 0 || mkdirs(base, 0700) < 0 ||
		    snprintf(serve.socket, sizeof(serve.socket), "%s/serve.sock", base) >= 100)
			return -1;
	}
	if (!serve.state[0]) {
		const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
		if (geteuid() == 0)
			snprintf(serve.state, sizeof(serve.state), "/var/lib/bulkhead/serve");
		else if (x && x[0] == '/')
			snprintf(serve.state, sizeof(serve.state), "%s/bulkhead/serve", x);
		else if (home && home[0] == '/')
			snprintf(serve.state, sizeof(serve.state), "%s/.local/state/bulkhead/serve",
				 home);
		else
			return -1;
	}
	const char *subs[] = { "", "/sessions", "/logs", "/work", "/scopes" };
	for (size_t i = 0; i < 5; i++) {
		char d[PATH_MAX + 16];
		snprintf(d, sizeof(d), "%s%s", serve.state, subs[i]);
		if (mkdirs(d, 0700) < 0 || chmod(d, 0700) < 0) {
			fprintf(stderr, "bulkhead serve: %s: %s\n", d, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Our socket, 0600 from the start (made under a umask of 077); with --allow-uid, 0666, and
 * each connection's peer credentials are the gate (serve/http.c). */
static int listen_socket(void)
{
	struct stat st;
	if (lstat(serve.socket, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			fprintf(stderr, "bulkhead serve: %s exists and is not a socket\n",
				serve.socket);
			return -1;
		}
		int probe = unix_connect(serve.socket, false);
		if (probe >= 0) {
			close(probe);
			fprintf(stderr, "bulkhead serve: another daemon answers at %s\n",
				serve.socket);
			return -1;
		}
		unlink(serve.socket);
	}
	/* The mode comes from the umask at bind: a chmod by path afterwards could be turned onto
	 * another file by whoever may write the socket's directory. */
	mode_t old = umask(serve.nallow ? 0111 : 0177);
	int fd = unix_listen(serve.socket, 128, false);
	umask(old);
	if (fd < 0)
		fprintf(stderr, "bulkhead serve: %s: %s\n", serve.socket, strerror(-fd));
	return fd;
}

static void reap(void)
{
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		serve_reaped(pid, st);
}

/* Until TERM or INT: reap, time, watch approvals. */
static int main_loop(int sfd)
{
	long long next_approvals = 0;
	for (;;) {
		struct pollfd p = { .fd = sfd, .events = POLLIN };
		int got = poll(&p, 1, 250);
		if (got < 0 && errno != EINTR)
			return -1;
		if (got > 0) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
			    (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT))
				return (int)si.ssi_signo;
		}
		reap();
		serve_tick();
		if (serve_now_ms() >= next_approvals) {
			serve_events_poll_approvals();
			next_approvals = serve_now_ms() + 1000;
		}
	}
}

static void stop_everything(int sfd)
{
	serve_stop_all(SIGTERM);
	long long end = serve_now_ms() + STOP_WAIT_MS;
	while (!serve_all_ended() && serve_now_ms() < end) {
		struct pollfd p = { .fd = sfd, .events = POLLIN };
		poll(&p, 1, 100);
		reap();
	}
	if (!serve_all_ended()) {
		serve_stop_all(SIGKILL);
		while (!serve_all_ended() && waitpid(-1, NULL, 0) > 0)
			reap();
		reap();
	}
	serve_cleanup_all();
}

int main(int argc, char **argv)
{
	int rc = options(argc, argv);
	if (rc >= 0)
		return rc;
	if (defaults() < 0) {
		fprintf(stderr, "bulkhead serve: cannot set up the socket or state directory\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* libarchive writes file names as UTF-8 in pax headers only under a UTF-8 locale. */
	setlocale(LC_CTYPE, "C.UTF-8");
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL); /* before any thread: they all inherit it */
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	serve_records_recover();
	serve_records_sweep();
	int lfd = listen_socket();
	if (sfd < 0 || lfd < 0 || pipe2(serve.lifeline, O_CLOEXEC) < 0)
		return 1;
	if (serve_http_start(lfd) < 0) {
		fprintf(stderr, "bulkhead serve: cannot start the HTTP server\n");
		return 1;
	}
	if (serve_pool_start() < 0) {
		fprintf(stderr, "bulkhead serve: pool thread: %s\n", strerror(errno));
		return 1;
	}
	fprintf(stderr, "bulkhead serve: listening on %s (state %s, pool %u)\n", serve.socket,
		serve.state, serve.pool_size);
	int sig = main_loop(sfd);
	fprintf(stderr, "bulkhead serve: %s; stopping every session\n",
		sig > 0 ? strsignal(sig) : "poll failed");
	stop_everything(sfd); /* first: each exec's stream ends with its session */
	serve_http_stop();
	unlink(serve.socket);
	return 0;
}
