/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/scrub_probe.c: plays a guest that tries to learn a secret from the broker's
 * response scrubber. It sends guesses for an echo upstream to repeat and records everything a
 * guest can observe of each answer: the status, the chunk sizes on the wire, the bytes that
 * arrived before the upstream's pause, the total, and the times (reported only).
 *
 *   scrub-probe observe SOCK URL GUESS...   one line per guess
 *   scrub-probe attack SOCK URL MAXLEN ALPHABET [KNOWN-START]
 *       extends a known prefix one character at a time, taking a character whose answer
 *       looks different (cmd_attack); prints what it recovered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>

#define OBS_MAX 512

struct obs {
	int status;
	char chunks[OBS_MAX]; /* the chunk sizes, comma-separated */
	size_t early;	      /* bytes before the longest gap between reads */
	size_t total;
	double ttfb_us, total_us;
	int done;
};

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int on_chunk(http_parser *p)
{
	struct obs *o = p->data;
	size_t l = strlen(o->chunks);

	if (p->content_length && l + 24 < sizeof(o->chunks))
		snprintf(o->chunks + l, sizeof(o->chunks) - l, "%s%llu", l ? "," : "",
			 (unsigned long long)p->content_length);
	return 0;
}

static int on_done(http_parser *p)
{
	((struct obs *)p->data)->done = 1;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = { .on_chunk_header = on_chunk,
					       .on_message_complete = on_done };

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 20 };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("scrub-probe: connect");
		exit(1);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* One request on the kept-alive connection FD; fills O. */
static int observe(int fd, const char *url, const char *guess, struct obs *o)
{
	char req[4096], buf[65536];
	double t0, last, gap = -1;
	size_t got = 0;
	http_parser p;
	int l;

	memset(o, 0, sizeof(*o));
	http_parser_init(&p, HTTP_RESPONSE);
	p.data = o;
	l = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nX-Reflect: %s\r\n\r\n", url, guess);
	t0 = last = now_us();
	if (send(fd, req, (size_t)l, MSG_NOSIGNAL) != l)
		return -1;
	while (!o->done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		double t = now_us();

		if (n <= 0)
			return -1;
		if (!got)
			o->ttfb_us = t - t0;
		else if (t - last > gap) { /* the longest silence so far: bytes before it */
			gap = t - last;
			o->early = got;
		}
		last = t;
		got += (size_t)n;
		http_parser_execute(&p, &settings, buf, (size_t)n);
		if (!o->done && HTTP_PARSER_ERRNO(&p) != HPE_OK)
			return -1;
	}
	if (gap < 0)
		o->early = got;
	o->total = got;
	o->total_us = now_us() - t0;
	o->status = p.status_code;
	return 0;
}

static int cmd_observe(const char *sock, const char *url, char **guesses, int n)
{
	int fd = connect_to(sock), i;

	for (i = 0; i < n; i++) {
		struct obs o;

		if (observe(fd, url, guesses[i], &o)) {
			fprintf(stderr, "scrub-probe: request %d failed\n", i);
			return 1;
		}
		printf("status=%d chunks=%s early=%zu total=%zu ttfb_us=%.0f total_us=%.0f\n",
		       o.status, o.chunks, o.early, o.total, o.ttfb_us, o.total_us);
	}
	close(fd);
	return 0;
}

/* What the attack compares: everything but the times (a test cannot gate on those). */
static int same(const struct obs *a, const struct obs *b)
{
	return a->status == b->status && !strcmp(a->chunks, b->chunks) && a->total == b->total;
}

/* One guess, observed; exits on a failed request. */
static void guess_obs(int fd, const char *url, const char *g, struct obs *o)
{
	if (observe(fd, url, g, o) || o->status != 200) {
		fprintf(stderr, "scrub-probe: request for '%s' failed\n", g);
		exit(1);
	}
}

/* At the first position, the answer most characters get is "not a prefix", and any other
 * stands out. Later, KNOWN+c is compared with a same-length guess that keeps c but not
 * KNOWN: a difference means KNOWN+c goes further into a secret than c alone. */
static int cmd_attack(const char *sock, const char *url, int maxlen, const char *alpha,
		      const char *start)
{
	size_t na = strlen(alpha), i, k, tried = 0;
	struct obs *o = calloc(na, sizeof(*o)), base;
	char known[256], g[260];
	int fd = connect_to(sock), len = (int)strlen(start), first = len;

	snprintf(known, sizeof(known), "%s", start);
	for (; len < first + maxlen && len < 200; len++) {
		size_t votes, best = 0, best_votes = 0, odd = 0, pick = na;

		for (i = 0; i < na; i++) {
			snprintf(g, sizeof(g), "%s%c", known, alpha[i]);
			guess_obs(fd, url, g, &o[i]);
			tried++;
		}
		for (i = 0; i < na && !len; i++) {
			for (votes = 0, k = 0; k < na; k++)
				votes += same(&o[i], &o[k]);
			if (votes > best_votes) {
				best_votes = votes;
				best = i;
			}
		}
		for (i = 0; i < na; i++) {
			int differs;

			if (!len) {
				differs = !same(&o[i], &o[best]);
			} else {
				memset(g, '#', (size_t)len);
				snprintf(g + len, sizeof(g) - (size_t)len, "%c", alpha[i]);
				guess_obs(fd, url, g, &base);
				tried++;
				differs = !same(&o[i], &base);
			}
			if (differs) {
				odd++;
				if (pick == na)
					pick = i;
			}
		}
		printf("position %d: %zu of %zu answers stand out\n", len, odd, na);
		fflush(stdout);
		if (pick == na)
			break;
		known[len] = alpha[pick];
		known[len + 1] = 0;
	}
	printf("requests: %zu\nrecovered: %s\n", tried, known);
	free(o);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "observe"))
		return cmd_observe(argv[2], argv[3], argv + 4, argc - 4);
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "attack"))
		return cmd_attack(argv[2], argv[3], atoi(argv[4]), argv[5],
				  argc == 7 ? argv[6] : "");
	fprintf(stderr, "usage: scrub-probe observe SOCK URL GUESS...\n"
			"       scrub-probe attack SOCK URL MAXLEN ALPHABET [KNOWN-START]\n");
	return 2;
}
