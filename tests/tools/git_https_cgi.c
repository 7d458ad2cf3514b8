/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/git_https_cgi.c: the git test server's CGI half — the request's meta-variables
 * (RFC 3875), `git http-backend` started on the spooled body, and its answer relayed over TLS
 * (chunked unless it gave a Content-Length). */
#include "tests/tools/git_https_server.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Part F of the request's URL, NUL-terminated, into DST (MAX_URL + 1 bytes). */
static void url_part(struct conn *c, const struct http_parser_url *u, int f, char *dst)
{
	size_t n = u->field_set & (1 << f) ? u->field_data[f].len : 0;

	memcpy(dst, c->url + u->field_data[f].off, n);
	dst[n] = 0;
}

/* Percent-decodes S in place (PATH_INFO is decoded, per RFC 3875); -1 if it decodes a NUL. */
static int url_decode(char *s)
{
	char *d = s, hex[3] = { 0 };

	for (; *s; s++) {
		if (*s == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			hex[0] = s[1];
			hex[1] = s[2];
			*d = (char)strtol(hex, NULL, 16);
			if (!*d++)
				return -1;
			s += 2;
		} else {
			*d++ = *s;
		}
	}
	*d = 0;
	return 0;
}

static int env_add(char **env, int *n, int max, const char *name, const char *value)
{
	if (*n >= max - 1 || asprintf(&env[*n], "%s=%s", name, value) < 0)
		return -1;
	env[++*n] = NULL;
	return 0;
}

/* CGI meta-variables (RFC 3875) plus http-backend's own; the caller's environment minus any
 * name we set, so PATH, HOME and GIT_CONFIG_* still reach git. Runs in the CGI's child. */
static char **cgi_env(struct conn *c, http_parser *p, const char *path, const char *query)
{
	static const char *const ours[] = { "REQUEST_METHOD",	 "PATH_INFO",
					    "PATH_TRANSLATED",	 "QUERY_STRING",
					    "CONTENT_TYPE",	 "CONTENT_LENGTH",
					    "GIT_PROJECT_ROOT",	 "GIT_HTTP_EXPORT_ALL",
					    "REMOTE_USER",	 "REMOTE_ADDR",
					    "GATEWAY_INTERFACE", "SERVER_PROTOCOL",
					    "GIT_PROTOCOL",	 NULL };
	int max = 64 + MAX_HEADERS, n = 0, i, j;
	char **env, **e, num[32], name[MAX_HEAD];
	const char *v;

	for (e = environ; *e; e++)
		max++;
	env = calloc((size_t)max, sizeof(*env));
	if (!env)
		return NULL;
	for (e = environ; *e; e++) {
		size_t l = strcspn(*e, "=");

		for (j = 0; ours[j] && (strlen(ours[j]) != l || strncmp(*e, ours[j], l)); j++)
			;
		if (!ours[j] && strncmp(*e, "HTTP_", 5))
			env[n++] = *e;
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)c->body);
	if (env_add(env, &n, max, "REQUEST_METHOD", http_method_str((enum http_method)p->method)) ||
	    env_add(env, &n, max, "PATH_INFO", path) ||
	    env_add(env, &n, max, "QUERY_STRING", query) ||
	    env_add(env, &n, max, "GIT_PROJECT_ROOT", root) ||
	    env_add(env, &n, max, "GIT_HTTP_EXPORT_ALL", "1") ||
	    env_add(env, &n, max, "REMOTE_USER", "git-test") ||
	    env_add(env, &n, max, "REMOTE_ADDR", c->peer) ||
	    env_add(env, &n, max, "GATEWAY_INTERFACE", "CGI/1.1") ||
	    env_add(env, &n, max, "SERVER_PROTOCOL", "HTTP/1.1") ||
	    ((c->spool >= 0 || p->method == HTTP_POST) &&
	     env_add(env, &n, max, "CONTENT_LENGTH", num)) ||
	    ((v = header(c, "Content-Type", NULL)) && env_add(env, &n, max, "CONTENT_TYPE", v)) ||
	    ((v = header(c, "Git-Protocol", NULL)) && env_add(env, &n, max, "GIT_PROTOCOL", v)))
		return NULL;
	/* Every other header as HTTP_NAME; not the credential, nor Proxy (httpoxy). */
	for (i = 0; i < c->nh; i++) {
		const char *h = c->head + c->h[i].name;
		size_t k;

		if (!strcasecmp(h, "Authorization") || !strcasecmp(h, "Proxy") ||
		    !strcasecmp(h, "Content-Type") || !strcasecmp(h, "Content-Length") ||
		    !strcasecmp(h, "Connection") || !strcasecmp(h, "Transfer-Encoding"))
			continue;
		snprintf(name, sizeof(name), "HTTP_%s", h);
		for (k = 5; name[k]; k++)
			name[k] = name[k] == '-' ? '_' : (char)toupper((unsigned char)name[k]);
		if (env_add(env, &n, max, name, c->head + c->h[i].value))
			return NULL;
	}
	return env;
}

/* Starts http-backend on the spooled body (or /dev/null); *out reads its stdout. */
static pid_t cgi_start(struct conn *c, http_parser *p, const char *path, const char *query,
		       int *out)
{
	int pfd[2];
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (!pid) {
		int in = c->spool >= 0 ? c->spool : open("/dev/null", O_RDONLY);
		char *argv[] = { "git-http-backend", NULL }, **env = cgi_env(c, p, path, query);

		signal(SIGPIPE, SIG_DFL);
		if (!env || in < 0 || dup2(in, 0) < 0 || dup2(pfd[1], 1) < 0)
			_exit(126);
		close(pfd[0]);
		close(pfd[1]);
		close(c->fd);
		if (in > 2)
			close(in);
		execve(backend, argv, env);
		perror("git-https-server: exec git-http-backend");
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0)
		close(pfd[0]);
	*out = pfd[0];
	return pid;
}

struct cgi {
	int fd;
	char buf[16384 + 64]; /* room for a chunk's size line before and CRLF after */
	size_t n, off;	      /* bytes in buf; where the header block ends */
	int status, chunked;
};

/* Reads the CGI's header block (up to its empty line) and sends it as an HTTP head: Status:
 * becomes the status line, our framing headers go last. 0, -502 for a broken CGI, -1 if the
 * client is gone. */
static int cgi_head(struct conn *c, struct cgi *g, int head_only)
{
	char *hb = g->buf + 16, *end, *crlf, *line, *eol, out[16384];
	size_t max = 16384, ol = 0;
	int sn;

	for (;;) {
		ssize_t r;

		if (g->n == max - 1)
			return -502;
		r = read(g->fd, hb + g->n, max - 1 - g->n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -502;
		g->n += (size_t)r;
		hb[g->n] = 0;
		end = strstr(hb, "\n\n");
		crlf = strstr(hb, "\n\r\n");
		if (crlf && (!end || crlf < end))
			end = crlf;
		if (end) {
			g->off = (size_t)(end - hb) + (end[1] == '\r' ? 3 : 2);
			break;
		}
	}
	g->status = 200;
	g->chunked = !head_only;
	for (line = hb; line < hb + g->off; line = eol + 1) {
		char *colon, *val;

		eol = strchr(line, '\n');
		*eol = 0;
		if (eol > line && eol[-1] == '\r')
			eol[-1] = 0;
		if (!*line)
			break;
		colon = strchr(line, ':');
		if (!colon || colon == line)
			return -502;
		*colon = 0;
		for (val = colon + 1; *val == ' ' || *val == '\t'; val++)
			;
		if (!strcasecmp(line, "Status")) {
			long s = strtol(val, &end, 10);

			if (end != val + 3 || s < 200 || s > 599 || (*end && *end != ' '))
				return -502;
			g->status = (int)s;
			continue;
		}
		if (!strcasecmp(line, "Connection") || !strcasecmp(line, "Transfer-Encoding") ||
		    !strcasecmp(line, "Keep-Alive"))
			continue;
		if (!strcasecmp(line, "Content-Length"))
			g->chunked = 0;
		sn = snprintf(out + ol, sizeof(out) - ol, "%s: %s\r\n", line, val);
		if (sn < 0 || (size_t)sn >= sizeof(out) - ol)
			return -502;
		ol += (size_t)sn;
	}
	if (g->status == 204 || g->status == 304)
		g->chunked = 0;
	sn = snprintf(out + ol, sizeof(out) - ol, "%sConnection: close\r\n\r\n",
		      g->chunked ? "Transfer-Encoding: chunked\r\n" : "");
	if (sn < 0 || (size_t)sn >= sizeof(out) - ol)
		return -502;
	ol += (size_t)sn;
	sn = snprintf(hb, max, "HTTP/1.1 %d %s\r\n", g->status, reason(g->status));
	return tls_write(c, hb, (size_t)sn) || tls_write(c, out, ol) ? -1 : 0;
}

/* Relays the CGI's body: what followed its header block, then the rest of the pipe. */
static int cgi_body(struct conn *c, struct cgi *g, int head_only)
{
	char *data = g->buf + 16;
	ssize_t n = (ssize_t)(g->n - g->off);

	memmove(data, data + g->off, (size_t)n);
	for (;;) {
		if (n > 0 && !head_only) {
			char x[16];
			int xl = g->chunked ? snprintf(x, sizeof(x), "%zx\r\n", (size_t)n) : 0;

			memcpy(data - xl, x, (size_t)xl);
			if (g->chunked)
				memcpy(data + n, "\r\n", 2);
			if (tls_write(c, data - xl, (size_t)n + (g->chunked ? (size_t)xl + 2 : 0)))
				return -1;
		}
		n = read(g->fd, data, 16384);
		if (n < 0 && errno == EINTR)
			n = 0;
		else if (n <= 0)
			return n < 0 ? -1 : 0;
	}
}

/* Runs http-backend and relays its answer, chunked unless it gave a Content-Length. A CGI that
 * fails after its headers gets no final chunk, so the client sees a truncated response.
 * Returns the status it answered with, negated, or a positive status still to be sent. */
int run_cgi(struct conn *c, http_parser *p, int *cgi_exit)
{
	static struct cgi g;
	struct http_parser_url u;
	char path[MAX_URL + 1], query[MAX_URL + 1];
	int head_only = p->method == HTTP_HEAD, r, ws = 0;
	pid_t pid;

	http_parser_url_init(&u);
	if (http_parser_parse_url(c->url, c->ulen, 0, &u) || !(u.field_set & (1 << UF_PATH)))
		return 400;
	url_part(c, &u, UF_PATH, path);
	url_part(c, &u, UF_QUERY, query);
	if (url_decode(path) || path[0] != '/')
		return 400;
	if (c->spool >= 0 && lseek(c->spool, 0, SEEK_SET) != 0)
		return 500;
	g.n = g.off = 0;
	pid = cgi_start(c, p, path, query, &g.fd);
	if (pid < 0)
		return 500;
	r = cgi_head(c, &g, head_only);
	if (!r)
		r = cgi_body(c, &g, head_only);
	close(g.fd);
	if (r)
		kill(pid, SIGTERM);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	*cgi_exit = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	if (r == -502)
		return 502;
	if (!r && g.chunked && !*cgi_exit)
		tls_write(c, "0\r\n\r\n", 5);
	return -g.status;
}
