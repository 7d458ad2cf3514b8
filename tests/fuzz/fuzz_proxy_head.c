/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_proxy_head.c: libFuzzer target for the broker's side of a guest connection:
 * whatever bytes a hostile guest sends on the broker port, through the real proxy_serve() —
 * request heads, both body framings, CONNECT with the session CA, keep-alive sequences.
 *
 * The input is the whole stream from the guest (then end of file). The scope allows one
 * destination and sends one secret to another, both 127.0.0.1 port 9, where nothing listens
 * (an allowed request fails at connect, at once, and nothing needs a name resolved), so every
 * input stays on this host and ends. Checks: ASan and UBSan on every byte's path; proxy_serve
 * returns and closes the connection once the guest's stream ends; what the broker writes back
 * starts as an HTTP response; and the secret's value never appears in it. */
#include "broker/mitm_ca.h"
#include "broker/proxy.h"
#include "broker/rules.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define SECRET	"fuzz-secret-7f3a9c"
#define OUT_MAX (1 << 20)

static struct rules rules;
static struct proxy_config cfg;
static char out[OUT_MAX];

static int fixed_secret(void *arg, const struct rules_secret *s, int flags, uint8_t **val,
			size_t *len, int64_t *until_ms, char *why, size_t whylen)
{
	(void)arg;
	(void)flags;
	(void)until_ms;
	(void)why;
	(void)whylen;
	if (strcmp(s->name, "TOK"))
		return -ENOENT;
	*val = (uint8_t *)strdup(SECRET);
	*len = strlen(SECRET);
	return *val ? 0 : -ENOMEM;
}

static const struct secret_source source = { .get = fixed_secret };

static int setup(void)
{
	static const char *scope =
		"{\"secrets\":[{\"name\":\"TOK\",\"inject\":{\"header\":\"Authorization\","
		"\"value\":\"Bearer {}\"},\"destinations\":[{\"scheme\":\"https\",\"host\":"
		"\"127.0.0.1\",\"port\":9,\"allow_addresses\":[\"127.0.0.1\"]}]}],"
		"\"allow\":[{\"scheme\":\"http\",\"host\":\"127.0.0.1\",\"port\":9,"
		"\"allow_addresses\":[\"127.0.0.1\"]}]}";
	char err[256];

	if (rules_load_json(&rules, scope, err, sizeof(err))) {
		fprintf(stderr, "fuzz_proxy_head: %s\n", err);
		return -1;
	}
	cfg.rules = &rules;
	cfg.secrets = &source;
	cfg.mitm = mitm_ca_new("fuzz", 3600, err, sizeof(err));
	cfg.io_timeout_ms = 2000;
	cfg.connect_timeout_ms = 200;
	return cfg.mitm ? 0 : -1;
}

struct feed {
	int fd;
	const uint8_t *data;
	size_t size;
};

/* The guest's side: sends the input (the broker may stop reading early), then EOF. */
static void *guest(void *arg)
{
	struct feed *f = arg;
	size_t off = 0;

	while (off < f->size) {
		ssize_t r = send(f->fd, f->data + off, f->size - off, MSG_NOSIGNAL);
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

/* Whether BUF holds the secret in any letter case. */
static int holds_secret(const uint8_t *buf, size_t n)
{
	size_t len = strlen(SECRET);

	for (size_t i = 0; i + len <= n; i++)
		if (!strncasecmp((const char *)buf + i, SECRET, len))
			return 1;
	return 0;
}

struct serve {
	int fd;
	unsigned long answered;
};

/* The broker's side, as a session's connection thread runs it; it closes the descriptor. */
static void *broker(void *arg)
{
	struct serve *s = arg;

	s->answered = proxy_serve(&cfg, s->fd, 1);
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct feed f = { .data = data, .size = size };
	struct serve s;
	pthread_t g, b;
	size_t n = 0;
	ssize_t r;
	int sv[2];

	if (!ready && setup() < 0)
		abort();
	ready = 1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	f.fd = sv[0];
	s.fd = sv[1];
	if (pthread_create(&g, NULL, guest, &f) || pthread_create(&b, NULL, broker, &s))
		abort();
	/* Everything the broker answers, until it closes the connection. */
	while (n < OUT_MAX - 1 && (r = recv(sv[0], out + n, OUT_MAX - 1 - n, 0)) > 0)
		n += (size_t)r;
	pthread_join(g, NULL);
	pthread_join(b, NULL);
	close(sv[0]);
	/* Unless the guest sent it itself (an echoed host, lower-cased, may hold it), it never
	 * comes back. */
	if (memmem(out, n, SECRET, strlen(SECRET)) && !holds_secret(data, size)) {
		fprintf(stderr, "fuzz_proxy_head: the secret went back to the guest\n");
		abort();
	}
	if (n && strncmp(out, "HTTP/1.1 ", n < 9 ? n : 9)) {
		fprintf(stderr, "fuzz_proxy_head: the broker answered something not HTTP: %.40s\n",
			out);
		abort();
	}
	return 0;
}
