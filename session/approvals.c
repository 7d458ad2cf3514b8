/* SPDX-License-Identifier: Apache-2.0 */
/* session/approvals.c: the approval queue of every broker on this host — the shared one,
 * <run dir>/broker.sock, and each session's private one, <run dir>/<session>/broker.ctl —
 * asked over its control socket (lib/control_proto.h). `bulkhead approvals` and
 * `bulkhead serve` both use it. */
#include "session/approvals.h"
#include "session/rundir.h"
#include "lib/control_proto.h"
#include "lib/unix_listen.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_BROKERS 256
#define ANSWER_MAX  (4 << 20)

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
json_t *approvals_collect(void (*complain)(const char *why))
{
	/* Each caller's own (the session API asks from many threads at once): 1 MiB is too much
	 * for a thread's stack and was a data race as one static array. */
	char(*socks)[PATH_MAX] = calloc(MAX_BROKERS, sizeof(*socks));
	size_t n = socks ? find_brokers(socks, MAX_BROKERS) : 0, i, k;
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
		if (!ans && complain)
			complain(why);
		json_decref(ans);
	}
	json_decref(req);
	free(socks);
	return all;
}

json_t *approvals_find(json_t *all, const char *id)
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

int approvals_decide(json_t *a, bool approve, const char *reason, char *why, size_t whylen)
{
	const char *id = json_string_value(json_object_get(a, "id")),
		   *sock = json_string_value(json_object_get(a, "broker"));
	if (!id || !sock) {
		snprintf(why, whylen, "the approval names no broker");
		return -1;
	}
	json_t *req =
		json_pack("{sisssssb}", CONTROL_KEY_VERSION, CONTROL_PROTO_VERSION, CONTROL_KEY_OP,
			  CONTROL_OP_APPROVALS_DECIDE, "id", id, "approve", approve);
	if (reason)
		json_object_set_new(req, "reason", json_string(reason));
	json_t *ans = ask(sock, req, why, whylen);
	int rc = -1;
	if (ans && !json_is_true(json_object_get(ans, "ok"))) {
		const char *e = json_string_value(json_object_get(ans, "error"));
		snprintf(why, whylen, "%s", e ? e : "refused");
	} else if (ans) {
		rc = 0;
	}
	json_decref(ans);
	json_decref(req);
	return rc;
}
