/* SPDX-License-Identifier: Apache-2.0 */
/* serve/bind.c: a guest taken from the pool, bound to the create's scope and broker. The
 * guest was booted with its own session CA and a broker that allows nothing; its supervisor
 * waits on <run dir>/bind.sock (session/session_bind.c), reads the scope once, judges it as a
 * cold start would (the same refusals, the same words) and starts the broker the create names
 * with that CA. Here: the create's fields as one request line, and its one answer. */
#include "serve/serve.h"

#include "lib/unix_listen.h"
#include "session/rundir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A binding takes what a broker's start takes: a shared broker's answer is waited for up to
 * 10 s by the supervisor (session/broker_dev.c), so this waits longer. */
#define BIND_ANSWER_S 20

static json_t *request(const struct serve_session *s, const struct serve_create *c)
{
	const char *scope = c->scope_inline ? s->scope_file : c->scope_path;
	return json_pack("{ss s:s* s:s* s:s* s:s*}", "scope", scope, "vault", c->vault, "ca_file",
			 c->ca_file, "audit", c->audit, "broker", c->broker);
}

/* Sends line on a connection to the supervisor and reads its answer (NULL with why). */
static json_t *exchange(const char *sock, const char *line, char *why, size_t whylen)
{
	int fd = unix_connect(sock, false);
	if (fd < 0) {
		snprintf(why, whylen, "the pool guest's supervisor: %s", strerror(-fd));
		return NULL;
	}
	struct timeval tv = { .tv_sec = BIND_ANSWER_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	char buf[2048];
	size_t got = 0;
	if (dprintf(fd, "%s\n", line) < 0) {
		snprintf(why, whylen, "the pool guest's supervisor: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	json_t *a = got ? json_loadb(buf, got, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
	if (!json_is_object(a)) {
		snprintf(why, whylen, "the pool guest's supervisor gave no answer%s",
			 serve.stopping ? " (the daemon is stopping)" : "");
		json_decref(a);
		return NULL;
	}
	return a;
}

int serve_bind(struct serve_session *s, const struct serve_create *c, char sha256[65], char *why,
	       size_t whylen)
{
	char sock[PATH_MAX], err[320];
	struct rundir rd;
	if (c->scope_inline && serve_scope_write(s, c->scope_inline, why, whylen) < 0)
		return -1;
	if (rundir_open(&rd, s->id, err, sizeof(err)) < 0 ||
	    rundir_file(&rd, "bind.sock", 1, sock, sizeof(sock)) < 0) {
		snprintf(why, whylen, "the pool guest's run directory: %s", err);
		return -1;
	}
	json_t *req = request(s, c);
	char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	json_t *a = line ? exchange(sock, line, why, whylen) : NULL;
	free(line);
	if (!a && !line) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (!a)
		return serve.stopping ? -1 : -2;
	const char *error = NULL, *digest = NULL, *broker = NULL, *audit = NULL;
	int ok = 0;
	int bad = json_unpack(a, "{sb s?s s?s s?s s?s}", "ok", &ok, "error", &error, "scope_sha256",
			      &digest, "broker", &broker, "audit", &audit);
	if (bad || !ok || !digest || strlen(digest) != 64 || !broker) {
		snprintf(why, whylen, "%s",
			 !bad && !ok && error ? error
					      : "the pool guest's supervisor gave no valid answer");
		json_decref(a);
		return -1;
	}
	memcpy(sha256, digest, 65);
	s->broker = !strcmp(broker, "shared") ? "shared" : "private";
	snprintf(s->audit, sizeof(s->audit), "%s", audit ? audit : "");
	json_decref(a);
	return 0;
}
