/* SPDX-License-Identifier: Apache-2.0 */
/* serve/exec.c: POST /v1/sessions/{id}/exec — one command in the guest (session/exec_client.c)
 * with its output streamed as NDJSON frames, and the exec's stdin, signals and window size
 * from other requests (POST /v1/execs/{exec}/...); its stream is serve/exec_stream.c.
 *
 * Other requests reach the exec only through two pipes: its stdin, and a control pipe of
 * small fixed-size messages (signal, window size) that the exec's own thread applies. The
 * registry of execs holds each by a count (refs): the stream, and each request writing. */
#include "session/exec_client.h"
#include "image/image.h"
#include "lib/agent_proto.h"
#include "lib/env_merge.h"
#include "lib/json_strict.h"
#include "serve/exec_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define EXEC_CONNECT_MS 10000
#define STDIN_WAIT_MS	30000
#define EXEC_ENV_MAX	64

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct serve_exec *execs;

void exec_closefd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void exec_put(struct serve_exec *e)
{
	pthread_mutex_lock(&reg_lock);
	bool last = --e->refs == 0;
	if (last)
		for (struct serve_exec **p = &execs; *p; p = &(*p)->next)
			if (*p == e) {
				*p = e->next;
				break;
			}
	pthread_mutex_unlock(&reg_lock);
	if (!last)
		return;
	if (e->c) {
		exec_client_close(e->c);
		free(e->c);
	}
	int *fds[] = { &e->out_r, &e->out_w, &e->err_r, &e->err_w,
		       &e->in_r,  &e->in_w,  &e->ctl_r, &e->ctl_w };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		exec_closefd(fds[i]);
	free(e->feed);
	free(e->frame);
	pthread_mutex_destroy(&e->stdin_lock);
	serve_session_put(e->sess);
	free(e);
}

/* The exec with this id in a session the peer owns, held; NULL if none. */
static struct serve_exec *exec_get(const char *id, const struct serve_peer *peer)
{
	pthread_mutex_lock(&reg_lock);
	struct serve_exec *e = execs;
	while (e && strcmp(e->id, id))
		e = e->next;
	if (e && !serve_peer_owns(peer, e->sess))
		e = NULL;
	if (e)
		e->refs++;
	pthread_mutex_unlock(&reg_lock);
	return e;
}

static const char *const exec_keys[] = { "cmd",	 "env",	  "cwd",       "tty",	     "rows",
					 "cols", "stdin", "stdin_b64", "stdin_open", NULL };

/* The exec's own "env" as "KEY=VALUE" strings (malloc'd) into store, NULL-terminated. */
static void exec_env(json_t *env, char **store)
{
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v)
	{
		if (n < EXEC_ENV_MAX && asprintf(&store[n], "%s=%s", k, json_string_value(v)) >= 0)
			n++;
	}
	store[n] = NULL;
}

/* The request's fields. 0, or -1 with why. */
static int exec_parse(json_t *body, char ***argv, struct serve_exec *e, bool *tty, unsigned *rows,
		      unsigned *cols, const char **cwd, char *why, size_t whylen)
{
	const char *unknown = json_strict_unknown(body, exec_keys);
	json_t *cmd = json_object_get(body, "cmd"), *v;
	size_t i;
	if (unknown) {
		snprintf(why, whylen, "unknown field \"%s\"", unknown);
		return -1;
	}
	if (!json_is_array(cmd) || !json_array_size(cmd) || json_array_size(cmd) > IMAGE_CMD_MAX) {
		snprintf(why, whylen, "\"cmd\" must be a non-empty array of at most %d strings",
			 IMAGE_CMD_MAX);
		return -1;
	}
	*argv = calloc(json_array_size(cmd) + 1, sizeof(char *));
	json_array_foreach(cmd, i, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(why, whylen, "\"cmd\" must hold strings without NUL");
			return -1;
		}
		(*argv)[i] = (char *)json_string_value(v);
	}
	json_t *tv = json_object_get(body, "tty"), *so = json_object_get(body, "stdin_open");
	json_t *r = json_object_get(body, "rows"), *c = json_object_get(body, "cols");
	json_t *cw = json_object_get(body, "cwd"), *in = json_object_get(body, "stdin"),
	       *in64 = json_object_get(body, "stdin_b64");
	if ((tv && !json_is_boolean(tv)) || (so && !json_is_boolean(so)) ||
	    (r &&
	     (!json_is_integer(r) || json_integer_value(r) < 1 || json_integer_value(r) > 65535)) ||
	    (c &&
	     (!json_is_integer(c) || json_integer_value(c) < 1 || json_integer_value(c) > 65535)) ||
	    (cw && (!json_is_string(cw) || json_string_value(cw)[0] != '/' ||
		    json_string_length(cw) > 4096)) ||
	    (in && !json_is_string(in)) || (in64 && !json_is_string(in64))) {
		snprintf(why, whylen,
			 "\"tty\" and \"stdin_open\" are booleans, \"rows\" and \"cols\" "
			 "1..65535, \"cwd\" an absolute path, \"stdin\" and "
			 "\"stdin_b64\" strings");
		return -1;
	}
	if ((in && in64) || ((in || in64) && json_is_true(so))) {
		snprintf(why, whylen, "give one of \"stdin\", \"stdin_b64\" and \"stdin_open\"");
		return -1;
	}
	*tty = json_is_true(tv);
	*rows = r ? (unsigned)json_integer_value(r) : 24;
	*cols = c ? (unsigned)json_integer_value(c) : 80;
	*cwd = cw ? json_string_value(cw) : NULL;
	e->stdin_open = json_is_true(so);
	if (in) {
		e->feed_len = json_string_length(in);
		e->feed = malloc(e->feed_len + 1);
		if (e->feed)
			memcpy(e->feed, json_string_value(in), e->feed_len);
	} else if (in64) {
		size_t n = json_string_length(in64);
		e->feed = malloc(n / 4 * 3 + 3);
		int dec = e->feed && n % 4 == 0
				  ? EVP_DecodeBlock((unsigned char *)e->feed,
						    (const unsigned char *)json_string_value(in64),
						    (int)n)
				  : -1;
		if (dec < 0) {
			snprintf(why, whylen, "\"stdin_b64\" is not base64");
			return -1;
		}
		const char *t = json_string_value(in64);
		e->feed_len = (size_t)dec - (n && t[n - 1] == '=') - (n > 1 && t[n - 2] == '=');
	}
	return serve_env_check(json_object_get(body, "env"), EXEC_ENV_MAX, why, whylen);
}

static int pipes(struct serve_exec *e)
{
	int p[4][2];
	for (int i = 0; i < 4; i++)
		if (pipe2(p[i], O_CLOEXEC | O_NONBLOCK) < 0) {
			while (i-- > 0)
				close(p[i][0]), close(p[i][1]);
			return -1;
		}
	e->out_r = p[0][0], e->out_w = p[0][1];
	e->err_r = p[1][0], e->err_w = p[1][1];
	e->in_r = p[2][0], e->in_w = p[2][1];
	e->ctl_r = p[3][0], e->ctl_w = p[3][1];
	/* The exec client polls before it writes, and writes a pipe's atomic size at most. */
	int fl = fcntl(e->out_w, F_GETFL);
	fcntl(e->out_w, F_SETFL, fl & ~O_NONBLOCK);
	fl = fcntl(e->err_w, F_GETFL);
	fcntl(e->err_w, F_SETFL, fl & ~O_NONBLOCK);
	fl = fcntl(e->in_r, F_GETFL);
	fcntl(e->in_r, F_SETFL, fl & ~O_NONBLOCK);
	return 0;
}

enum serve_err serve_exec_body(struct serve_session *sess, json_t *body, int client_fd,
			       struct serve_body *out, char *why, size_t whylen)
{
	struct serve_exec *e = calloc(1, sizeof(*e));
	char **argv = NULL, *store[EXEC_ENV_MAX + 1] = { 0 },
	     *envp[IMAGE_ENV_MAX + SERVE_ENV_MAX + EXEC_ENV_MAX + 1];
	bool tty = false;
	unsigned rows = 24, cols = 80;
	const char *cwd = NULL;
	enum serve_err err = SERVE_E_INVALID;
	if (!e) {
		serve_session_put(sess);
		snprintf(why, whylen, "out of memory");
		return SERVE_E_INTERNAL;
	}
	e->sess = sess;
	e->refs = 1;
	e->client_fd = client_fd;
	pthread_mutex_init(&e->stdin_lock, NULL);
	int *fds[] = { &e->out_r, &e->out_w, &e->err_r, &e->err_w,
		       &e->in_r,  &e->in_w,  &e->ctl_r, &e->ctl_w };
	for (size_t i = 0; i < 8; i++)
		*fds[i] = -1;
	if (exec_parse(body, &argv, e, &tty, &rows, &cols, &cwd, why, whylen) < 0)
		goto fail;
	err = SERVE_E_INTERNAL;
	if (!cwd)
		cwd = sess->cwd;
	/* The image's environment under the session's, under the exec's own. */
	exec_env(json_object_get(body, "env"), store);
	char *const *const layers[] = { sess->image_env, sess->env, store, NULL };
	env_merge(layers, envp, sizeof(envp) / sizeof(envp[0]) - 1);
	unsigned char rnd[8];
	if (getrandom(rnd, 8, 0) != 8 || pipes(e) < 0 || !(e->c = calloc(1, sizeof(*e->c)))) {
		snprintf(why, whylen, "cannot set up the exec: %s", strerror(errno));
		goto fail;
	}
	for (int i = 0; i < 8; i++)
		snprintf(e->id + 2 * i, 3, "%02x", rnd[i]);
	bool with_stdin = e->stdin_open || e->feed;
	if (!with_stdin)
		exec_closefd(&e->in_w), exec_closefd(&e->in_r);
	e->c->in_fd = e->in_r;
	e->c->out_fd = e->out_w;
	e->c->err_fd = e->err_w;
	uint32_t flags = (tty ? AGENT_EXEC_TTY : 0) | (with_stdin ? AGENT_EXEC_STDIN : 0);
	if (exec_client_open(e->c, sess->uds, AGENT_PORT, EXEC_CONNECT_MS, flags, (uint16_t)rows,
			     (uint16_t)cols, cwd, argv, envp) < 0) {
		err = SERVE_E_CONFLICT;
		snprintf(why, whylen, "session %s: %s", sess->id, e->c->error);
		free(e->c);
		e->c = NULL;
		goto fail;
	}
	pthread_mutex_lock(&reg_lock);
	e->next = execs;
	execs = e;
	pthread_mutex_unlock(&reg_lock);
	*out = (struct serve_body){ .fd = -1,
				    .read = exec_stream_read,
				    .release = exec_stream_free,
				    .cls = e,
				    .block = 64 * 1024 };
	free(argv);
	for (size_t i = 0; store[i]; i++)
		free(store[i]);
	return SERVE_OK;
fail:
	free(argv);
	for (size_t i = 0; store[i]; i++)
		free(store[i]);
	exec_put(e);
	return err;
}

enum serve_err serve_exec_stdin(const char *id, const struct serve_peer *peer, const char *data,
				size_t len, bool eof, char *why, size_t whylen)
{
	struct serve_exec *e = exec_get(id, peer);
	if (!e) {
		snprintf(why, whylen, "no exec %s", id);
		return SERVE_E_NOT_FOUND;
	}
	enum serve_err rc = SERVE_OK;
	pthread_mutex_lock(&e->stdin_lock);
	if (!e->stdin_open || e->in_w < 0) {
		snprintf(why, whylen, "exec %s has no open stdin", id);
		rc = SERVE_E_CONFLICT;
	}
	for (size_t off = 0; rc == SERVE_OK && off < len;) {
		struct pollfd p = { .fd = e->in_w, .events = POLLOUT };
		if (poll(&p, 1, STDIN_WAIT_MS) <= 0) {
			snprintf(why, whylen, "the command did not read its stdin within %d s",
				 STDIN_WAIT_MS / 1000);
			rc = SERVE_E_TIMEOUT;
			break;
		}
		ssize_t w = write(e->in_w, data + off, len - off);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(why, whylen, "the command's stdin is closed");
			rc = SERVE_E_CONFLICT;
		}
		if (w > 0)
			off += (size_t)w;
	}
	if (rc == SERVE_OK && eof)
		exec_closefd(&e->in_w);
	pthread_mutex_unlock(&e->stdin_lock);
	exec_put(e);
	return rc;
}

enum serve_err serve_exec_control(const char *id, const struct serve_peer *peer, int kind, int a,
				  int b, char *why, size_t whylen)
{
	struct serve_exec *e = exec_get(id, peer);
	if (!e) {
		snprintf(why, whylen, "no exec %s", id);
		return SERVE_E_NOT_FOUND;
	}
	struct ctl_msg m = { .kind = (char)kind, .a = a, .b = b };
	enum serve_err rc =
		write(e->ctl_w, &m, sizeof(m)) == (ssize_t)sizeof(m) ? SERVE_OK : SERVE_E_BUSY;
	if (rc)
		snprintf(why, whylen, "exec %s is not taking signals now", id);
	exec_put(e);
	return rc;
}

int serve_exec_quiet(const struct serve_session *s, char *const argv[], int timeout_ms)
{
	struct exec_client *c = calloc(1, sizeof(*c));
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC), rc = -1;
	char *env[] = { NULL };
	if (!c || null < 0)
		goto out;
	c->in_fd = -1;
	c->out_fd = c->err_fd = null;
	if (exec_client_open(c, s->uds, AGENT_PORT, EXEC_CONNECT_MS, 0, 24, 80, "/", argv, env) < 0)
		goto out;
	long long end = serve_now_ms() + timeout_ms;
	int step = 0;
	while (step == 0 && serve_now_ms() < end) {
		struct pollfd pfd[EXEC_CLIENT_POLLFDS];
		int n = exec_client_pollfds(c, pfd);
		if (poll(pfd, (nfds_t)n, 100) < 0 && errno != EINTR)
			break;
		step = exec_client_handle(c, pfd, n);
	}
	if (step == 1 && !c->error[0])
		rc = exec_client_status(c);
	exec_client_close(c);
out:
	free(c);
	if (null >= 0)
		close(null);
	return rc;
}
