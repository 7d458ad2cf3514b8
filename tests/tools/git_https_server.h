/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/git_https_server.h: what the git test server's two halves share — one
 * connection's request (git_https_server.c parses it over TLS) and the CGI that answers it
 * (git_https_cgi.c runs `git http-backend`). */
#ifndef BULKHEAD_TESTS_GIT_HTTPS_SERVER_H
#define BULKHEAD_TESTS_GIT_HTTPS_SERVER_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>
#include <openssl/ssl.h>

#define MAX_URL	    8192
#define MAX_HEAD    32768
#define MAX_HEADERS 100
#define MAX_BODY    (512ull << 20)
#define CONN_LIMIT  600 /* seconds a whole connection may take, CGI included */

struct hdr {
	size_t name, value, nlen, vlen; /* offsets into conn.head */
};

struct conn {
	int fd;
	SSL *ssl;
	char peer[INET_ADDRSTRLEN];
	char url[MAX_URL + 1];
	size_t ulen;
	char head[MAX_HEAD];
	size_t hlen;
	struct hdr h[MAX_HEADERS];
	int nh, in_value;
	int spool; /* unlinked temp file holding the body, or -1 */
	uint64_t body;
	int status; /* set when we answer without running the CGI */
	int method_seen, complete, chunked, gzip, v2;
	const char *auth_state;
};

/* git_https_server.c */
extern const char *root, *backend; /* the repositories, and git-http-backend's path */
/* The value of header NAME, or NULL; *dup counts how often it was sent. */
const char *header(struct conn *c, const char *name, int *dup);
int tls_write(struct conn *c, const void *b, size_t n);
/* The reason phrase of STATUS. */
const char *reason(int status);

/* git_https_cgi.c: runs http-backend for the parsed request and relays its answer. Returns
 * the status it answered with, negated, or a positive status still to be sent. */
int run_cgi(struct conn *c, http_parser *p, int *cgi_exit);

#endif
