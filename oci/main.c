/* SPDX-License-Identifier: Apache-2.0 */
/* oci/main.c: bulkhead-oci — the global options runc's callers pass, the subcommand table,
 * errors as runc reports them (stderr, and --log as text or JSON lines), and `features`. */
#include "session/exit_codes.h"
#include "oci/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

static void log_line(const struct oci_globals *g, const char *level, const char *msg)
{
	if (!g->log)
		return;
	int fd = open(g->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	char when[40];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (g->log_json) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "level", level, "msg", msg, "time", when);
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (s)
			dprintf(fd, "%s\n", s);
		free(s);
		json_decref(o);
	} else {
		dprintf(fd, "time=\"%s\" level=%s msg=\"%s\"\n", when, level, msg);
	}
	close(fd);
}

/* LEVEL "error" goes to stderr too. */
static void say(const struct oci_globals *g, const char *level, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void say(const struct oci_globals *g, const char *level, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (strcmp(level, "error") == 0)
		fprintf(stderr, "bulkhead-oci: %s\n", msg);
	log_line(g, level, msg);
}

void oci_error(const struct oci_globals *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(g, "error", fmt, ap);
	va_end(ap);
}

void oci_note(const struct oci_globals *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say(g, "info", fmt, ap);
	va_end(ap);
}

int oci_pid_file(const char *file, pid_t pid)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.bulkhead-tmp", file) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	int ok = dprintf(fd, "%d", (int)pid) > 0;
	if (close(fd) < 0 || !ok || rename(tmp, file) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

int oci_features(const struct oci_globals *g, int argc, char **argv)
{
	(void)g;
	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "usage: bulkhead-oci features\n");
		return 1;
	}
	puts("{\"ociVersionMin\":\"1.0.0\",\"ociVersionMax\":\"1.1.0\",\"hooks\":[],"
	     "\"mountOptions\":[\"bind\",\"rbind\",\"ro\",\"rw\"],"
	     "\"linux\":{\"namespaces\":[],\"capabilities\":[],\"cgroup\":{\"v1\":true,\"v2\":true}"
	     ","
	     "\"seccomp\":{\"enabled\":false},\"apparmor\":{\"enabled\":false},"
	     "\"selinux\":{\"enabled\":false}},"
	     "\"annotations\":{\"io.bulkhead.runtime\":\"microvm\"}}");
	return 0;
}

static const char usage[] =
	"usage: bulkhead-oci [--root DIR] [--log FILE] [--log-format text|json]\n"
	"                    [--scope FILE] [--vault FILE] [--ca-file FILE] [--broker SOCK]\n"
	"                    [--share-secrets refuse|hide] COMMAND ...\n"
	"An OCI runtime: each container is a bulkhead microVM (docs/OCI.md). --scope, --vault,\n"
	"--ca-file and --broker are the broker's defaults for containers whose annotations\n"
	"(io.bulkhead.scope, .vault, .ca-file, .broker, .audit) say nothing. Credential files in\n"
	"a bind mount's source (.env, keys, a token in .git/config) refuse the container unless\n"
	"--share-secrets hide or the annotation io.bulkhead.share-secrets says hide.\n"
	"  create [--bundle DIR] [--pid-file F] [--console-socket S] ID\n"
	"  start ID | state ID | kill ID [SIGNAL] | delete [--force] ID\n"
	"  exec [--process FILE] [--detach] [--pid-file F] [--console-socket S] ID [CMD...]\n"
	"  list | features\n";

struct command {
	const char *name;
	int (*run)(const struct oci_globals *g, int argc, char **argv);
};

static const struct command commands[] = {
	{ "create", oci_create },     { "start", oci_start },	{ "state", oci_state },
	{ "kill", oci_kill },	      { "delete", oci_delete }, { "exec", oci_exec },
	{ "features", oci_features }, { "list", oci_list },
};

/* Global options: --opt VALUE or --opt=VALUE; a flag takes no value. The ones runc's callers
 * pass that change nothing here (--systemd-cgroup, --debug, --rootless) are accepted. */
static int globals(int argc, char **argv, struct oci_globals *g)
{
	static const char *const flags[] = { "--systemd-cgroup", "--debug", NULL };
	static const char *const ignored_values[] = { "--rootless", "--criu", NULL };
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);
		bool known_flag = false;
		for (size_t k = 0; flags[k]; k++)
			known_flag |= strncmp(a, flags[k], klen) == 0 && flags[k][klen] == '\0';
		if (known_flag)
			continue;
		const char *val = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
		if (!val) {
			fprintf(stderr, "bulkhead-oci: %s needs a value\n", a);
			return -1;
		}
		if (!eq)
			i++;
		if (strncmp(a, "--root", klen) == 0 && klen == 6)
			g->root = val;
		else if (strncmp(a, "--log", klen) == 0 && klen == 5)
			g->log = val;
		else if (strncmp(a, "--log-format", klen) == 0 && klen == 12)
			g->log_json = strcmp(val, "json") == 0;
		else if (strncmp(a, "--scope", klen) == 0 && klen == 7)
			g->scope = val;
		else if (strncmp(a, "--vault", klen) == 0 && klen == 7)
			g->vault = val;
		else if (strncmp(a, "--ca-file", klen) == 0 && klen == 9)
			g->ca_file = val;
		else if (strncmp(a, "--broker", klen) == 0 && klen == 8)
			g->broker = val;
		else if (strncmp(a, "--share-secrets", klen) == 0 && klen == 15)
			g->share_secrets = val;
		else {
			bool ok = false;
			for (size_t k = 0; ignored_values[k]; k++)
				ok |= strncmp(a, ignored_values[k], klen) == 0 &&
				      ignored_values[k][klen] == '\0';
			if (!ok) {
				fprintf(stderr, "bulkhead-oci: unknown global option %s\n", a);
				return -1;
			}
		}
	}
	return i;
}

/* Descriptors: 0-2 are the container's stdio (made /dev/null where the caller closed one, so
 * that nothing of ours lands there); nothing above them is ours to keep. containerd's shim
 * leaves a socket open at 3: a supervisor holding it for the container's life would keep the
 * caller's end from ever seeing EOF. */
static void tidy_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
			_exit(1);
	close_range(3, ~0U, 0);
}

int main(int argc, char **argv)
{
	struct oci_globals g = { 0 };
	tidy_fds();
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		puts("bulkhead-oci version 0.1\nspec: 1.1.0");
		return 0;
	}
	int i = globals(argc, argv, &g);
	if (i < 0)
		return 1;
	if (i >= argc) {
		fputs(usage, stderr);
		return 1;
	}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (strcmp(argv[i], commands[k].name) == 0)
			return commands[k].run(&g, argc - i, argv + i);
	oci_error(&g,
		  "unknown command '%s' (pause, resume, update, checkpoint and ps are not "
		  "supported: see docs/OCI.md)",
		  argv[i]);
	return 1;
}
