/* SPDX-License-Identifier: Apache-2.0 */
/* cli/approvals_cmd.c: `bulkhead approvals list|show ID|approve ID|deny ID [--reason R]` —
 * asks every broker on this host (the shared one, <run dir>/broker.sock, and each session's
 * private one, <run dir>/<session>/broker.ctl) over its control socket (lib/control_proto.h).
 * Host only: no vsock port leads to these sockets, and the brokers check who connects. */
#include "cli/broker_cmds.h"
#include "cli/rundir.h"
#include "lib/control_proto.h"
#include "lib/unix_listen.h"
#include "cli/exit_codes.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define MAX_BROKERS 256
#define ANSWER_MAX  (4 << 20)

static const char approvals_usage[] =
	"usage: bulkhead approvals list [--json]\n"
	"       bulkhead approvals show ID\n"
	"       bulkhead approvals approve ID [--reason TEXT]\n"
	"       bulkhead approvals deny ID [--reason TEXT]\n"
	"\n"
	"Requests the global policy holds for a person. Each approval is bound to one exact\n"
	"request (its SHA-256 is shown) and is used once; undecided, it is denied when its TTL\n"
	"runs out or its session ends. The guest gets the upstream's answer after approve, or a\n"
	"403 naming the approval and the reason.\n";

/* One request, one JSON answer line. NULL (with why) when the broker cannot be asked. */
static json_t *ask(const char *sock, json_t *req, char *why, size_t whylen)
{
	char *line = json_dumps(req, JSON_COMPACT), *buf = NULL;
	size_t n = 0;
	json_t *ans = NULL;
	int fd = line ? unix_connect(sock, false) : -ENOMEM;
	struct timeval tv = { .tv_sec = 10 };

	if (fd < 0) {
		snprintf(why, whylen, "%s: %s", sock, strerror(-fd));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0 || send(fd, "\n", 1, MSG_NOSIGNAL) < 0) {
		snprintf(why, whylen, "%s: %s", sock, strerror(errno));
		goto out;
	}
	buf = malloc(ANSWER_MAX + 1);
	while (buf && n < ANSWER_MAX) {
		ssize_t r = recv(fd, buf + n, ANSWER_MAX - n, 0);

		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(buf, '\n', n))
			break;
	}
	if (buf) {
		buf[n] = '\0';
		ans = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
	}
	if (!ans)
		snprintf(why, whylen, "%s: no valid answer", sock);
out:
	if (fd >= 0)
		close(fd);
	free(line);
	free(buf);
	return ans;
}

/* Every broker control socket under the run directory. */
static size_t find_brokers(char socks[][PATH_MAX], size_t max)
{
	char base[PATH_MAX];
	struct dirent *e;
	struct stat st;
	size_t n = 0;
	DIR *d;

	if (rundir_base(base, sizeof(base)) < 0)
		return 0;
	if (snprintf(socks[n], PATH_MAX, "%s/broker.sock", base) < PATH_MAX &&
	    stat(socks[n], &st) == 0 && S_ISSOCK(st.st_mode))
		n++;
	d = opendir(base);
	while (d && (e = readdir(d)) && n < max) {
		if (e->d_name[0] == '.')
			continue;
		if (snprintf(socks[n], PATH_MAX, "%s/%s/broker.ctl", base, e->d_name) < PATH_MAX &&
		    stat(socks[n], &st) == 0 && S_ISSOCK(st.st_mode))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* All pending approvals, each tagged with the socket of the broker that holds it. */
static json_t *collect(void)
{
	static char socks[MAX_BROKERS][PATH_MAX];
	size_t n = find_brokers(socks, MAX_BROKERS), i, k;
	json_t *all = json_array(),
	       *req = json_pack("{siss}", CONTROL_KEY_VERSION, CONTROL_PROTO_VERSION,
				CONTROL_KEY_OP, CONTROL_OP_APPROVALS_LIST);
	char why[PATH_MAX + 64];

	for (i = 0; i < n; i++) {
		json_t *ans = ask(socks[i], req, why, sizeof(why)), *list, *a;

		list = json_object_get(ans, "approvals");
		json_array_foreach(list, k, a)
		{
			json_object_set_new(a, "broker", json_string(socks[i]));
			json_array_append(all, a);
		}
		if (!ans)
			fprintf(stderr, "bulkhead approvals: %s\n", why);
		json_decref(ans);
	}
	json_decref(req);
	return all;
}

static json_t *find(json_t *all, const char *id)
{
	size_t i;
	json_t *a;

	json_array_foreach(all, i, a)
	{
		if (!strcmp(json_string_value(json_object_get(a, "id")) ?: "", id))
			return a;
	}
	return NULL;
}

static const char *s_or(json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : dflt;
}

static int list(int as_json)
{
	json_t *all = collect(), *a;
	time_t now = time(NULL);
	size_t i;

	if (as_json) {
		char *s = json_dumps(all, JSON_INDENT(2));

		puts(s ? s : "[]");
		free(s);
	} else if (!json_array_size(all)) {
		puts("no pending approvals");
	} else {
		printf("%-12s  %-16s  %-7s  %-8s  %s\n", "ID", "SESSION", "METHOD", "EXPIRES",
		       "URL");
		json_array_foreach(all, i, a)
		{
			long left = (long)(json_integer_value(json_object_get(a, "expires")) - now);

			printf("%-12s  %-16s  %-7s  %5lds    %s\n", s_or(a, "id", "-"),
			       s_or(a, "session", "-"), s_or(a, "method", "-"), left < 0 ? 0 : left,
			       s_or(a, "url", "-"));
		}
	}
	json_decref(all);
	return 0;
}

static int show(const char *id)
{
	json_t *all = collect(), *a = find(all, id), *refs;
	size_t i;

	if (!a) {
		fprintf(stderr, "bulkhead approvals: no pending approval %s\n", id);
		json_decref(all);
		return 1;
	}
	printf("id:      %s\nsession: %s\nrequest: %s %s\nrule:    %s\nsecret:  %s\n"
	       "sha256:  %s\nbody:    %s\n",
	       s_or(a, "id", "-"), s_or(a, "session", "-"), s_or(a, "method", "-"),
	       s_or(a, "url", "-"), s_or(a, "rule", "-"), s_or(a, "secret", "-"),
	       s_or(a, "sha256", "-"), s_or(a, "body", ""));
	refs = json_object_get(a, "git_refs");
	for (i = 0; i < json_array_size(refs); i++)
		printf("git ref: %s\n", json_string_value(json_array_get(refs, i)));
	json_decref(all);
	return 0;
}

static int decide_cmd(const char *id, int approve, const char *reason)
{
	json_t *all = collect(), *a = find(all, id), *req, *ans;
	char why[PATH_MAX + 64];
	int rc = 1;

	if (!a) {
		fprintf(stderr, "bulkhead approvals: no pending approval %s\n", id);
		json_decref(all);
		return 1;
	}
	req = json_pack("{sisssssb}", CONTROL_KEY_VERSION, CONTROL_PROTO_VERSION, CONTROL_KEY_OP,
			CONTROL_OP_APPROVALS_DECIDE, "id", id, "approve", approve);
	if (reason)
		json_object_set_new(req, "reason", json_string(reason));
	ans = ask(s_or(a, "broker", ""), req, why, sizeof(why));
	if (!ans)
		fprintf(stderr, "bulkhead approvals: %s\n", why);
	else if (!json_is_true(json_object_get(ans, "ok")))
		fprintf(stderr, "bulkhead approvals: %s\n", s_or(ans, "error", "refused"));
	else {
		printf("%s %s\n", approve ? "approved" : "denied", id);
		rc = 0;
	}
	json_decref(ans);
	json_decref(req);
	json_decref(all);
	return rc;
}

int cmd_approvals(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "list") &&
	    (argc == 2 || (argc == 3 && !strcmp(argv[2], "--json"))))
		return list(argc == 3);
	if (argc == 3 && !strcmp(argv[1], "show"))
		return show(argv[2]);
	if ((argc == 3 || (argc == 5 && !strcmp(argv[3], "--reason"))) &&
	    (!strcmp(argv[1], "approve") || !strcmp(argv[1], "deny")))
		return decide_cmd(argv[2], argv[1][0] == 'a', argc == 5 ? argv[4] : NULL);
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(approvals_usage, stdout);
		return 0;
	}
	fputs(approvals_usage, stderr);
	return EXIT_BULKHEAD;
}
