/* SPDX-License-Identifier: Apache-2.0 */
/* bench/idle_conns.c: idle-conns, bench/broker-idle.sh's client — holds N connections to a
 * shared broker's session sockets, spread evenly, first silent, then each after one completed
 * keep-alive request, and with all of them still open sends one request per session on a new
 * connection and times it. After each phase it reads the broker's VmRSS, Threads and open
 * descriptors from /proc and prints one key=value line; connections the broker refused, closed
 * or answered with an error are counted, with the first reason, never dropped silently. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <http_parser.h>
#include <signal.h>

#define IDLE_IO_TIMEOUT_S 10 /* connect (a full backlog) and each response */
/* Phase 3 goes one session after another: a broker that serves none still ends in minutes. */
#define IDLE_SESSION_TIMEOUT_S 3
#define IDLE_THREADS	       64 /* phase 2: requests on the held connections, this many at once */
#define IDLE_MAX_SOCKETS       4096
#define IDLE_REQ_MAX	       2048

static const char *sockets[IDLE_MAX_SOCKETS];
static int nsock, broker_pid, *fds, nfds;
static char idle_req[IDLE_REQ_MAX], sess_req[IDLE_REQ_MAX];
static const char *idle_expect, *sess_expect;
static atomic_int next_conn;
static atomic_long n_ok, n_failed, n_closed;
static pthread_mutex_t why_lock = PTHREAD_MUTEX_INITIALIZER;
static char why[512]; /* the first reason a connection was lost in the current phase */

static void note_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_why(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&why_lock);
	if (!why[0]) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
		for (char *p = why; *p; p++)
			if ((unsigned char)*p < ' ')
				*p = ' ';
	}
	pthread_mutex_unlock(&why_lock);
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The broker's open descriptors, or -1. */
static long broker_fds(void)
{
	char path[64];
	long nfd = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", broker_pid);
	d = opendir(path);
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		nfd += e->d_name[0] != '.';
	closedir(d);
	return nfd;
}

/* Waits until the broker has taken what was sent: its descriptors unchanged for a second (it
 * accepts, and opens upstreams, behind the client), at least settle_ms, at most a minute. */
static void settle(int settle_ms)
{
	long last = -2, same = 0;

	usleep((useconds_t)settle_ms * 1000);
	for (int i = 0; i < 240 && same < 4; i++) {
		long n = broker_fds();

		same = n == last ? same + 1 : 0;
		last = n;
		usleep(250000);
	}
}

/* VmRSS, Threads and the open descriptors of the broker, as " rss_kib=.. threads=.. fds=..". */
static void print_broker(void)
{
	char path[64], line[256];
	long rss = -1, threads = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", broker_pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "VmRSS: %ld", &rss);
		sscanf(line, "Threads: %ld", &threads);
	}
	if (f)
		fclose(f);
	printf(" rss_kib=%ld threads=%ld fds=%ld\n", rss, threads, broker_fds());
	fflush(stdout);
}

static int unix_connect(const char *path, int timeout_s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_s };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	/* SO_SNDTIMEO bounds a Unix connect waiting on a full backlog, SO_RCVTIMEO each read. */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Connections the broker has closed or answered unasked (a refusal such as 503) since they
 * were made: counted, their first reason kept, their descriptors closed. Returns the count. */
static long sweep(void)
{
	struct pollfd *p = calloc((size_t)nfds, sizeof(*p));
	long lost = 0;

	if (!p)
		return -1;
	for (int i = 0; i < nfds; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	poll(p, (nfds_t)nfds, 0);
	for (int i = 0; i < nfds; i++) {
		char buf[512];
		ssize_t n;

		if (fds[i] < 0 || !p[i].revents)
			continue;
		n = recv(fds[i], buf, sizeof(buf) - 1, MSG_DONTWAIT);
		buf[n > 0 ? n : 0] = '\0';
		note_why("%s", n > 0 ? buf : "closed by the broker without a word");
		close(fds[i]);
		fds[i] = -1;
		lost++;
	}
	free(p);
	return lost;
}

struct resp {
	http_parser p;
	int done, keep;
	size_t n;
	char body[8192];
};

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct resp *r = p->data;
	size_t room = sizeof(r->body) - 1 - r->n;

	memcpy(r->body + r->n, at, n < room ? n : room);
	r->n += n < room ? n : room;
	r->body[r->n] = '\0';
	return 0;
}

static int on_complete(http_parser *p)
{
	struct resp *r = p->data;

	r->done = 1;
	r->keep = http_should_keep_alive(p);
	http_parser_pause(p, 1);
	return 0;
}

/* One request on fd and its whole response: 0 when 200 with EXPECT in the body, -1 with the
 * reason noted. *keep: the broker keeps the connection open after it. */
static int exchange(int fd, const char *req, const char *expect, int *keep)
{
	static const http_parser_settings s = { .on_body = on_body,
						.on_message_complete = on_complete };
	struct resp r = { .done = 0 };
	char buf[16384];

	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		note_why("cannot send: %s", strerror(errno));
		return -1;
	}
	http_parser_init(&r.p, HTTP_RESPONSE);
	r.p.data = &r;
	while (!r.done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0) {
			note_why("%s", n ? "no response in time" : "closed without a response");
			return -1;
		}
		http_parser_execute(&r.p, &s, buf, (size_t)n);
		if (!r.done && HTTP_PARSER_ERRNO(&r.p) != HPE_OK) {
			note_why("malformed response");
			return -1;
		}
	}
	*keep = r.keep;
	if (r.p.status_code != 200 || (expect && !strstr(r.body, expect))) {
		note_why("status %u: %.200s", r.p.status_code, r.body);
		return -1;
	}
	return 0;
}

/* Phase 2's threads: one keep-alive request on each held connection, which stays open. */
static void *keepalive_worker(void *arg)
{
	int i, keep = 0;

	(void)arg;
	while ((i = atomic_fetch_add(&next_conn, 1)) < nfds) {
		if (fds[i] < 0)
			continue;
		if (exchange(fds[i], idle_req, idle_expect, &keep)) {
			atomic_fetch_add(&n_failed, 1);
		} else if (!keep) {
			atomic_fetch_add(&n_closed, 1);
			note_why("the broker answered but will close the connection");
		} else {
			atomic_fetch_add(&n_ok, 1);
			continue;
		}
		close(fds[i]);
		fds[i] = -1;
	}
	return NULL;
}

static void print_why(const char *phase)
{
	if (why[0])
		printf("why %s: %s\n", phase, why);
	why[0] = '\0';
}

/* Phase 1: N connections, round robin over the sockets, that send nothing. A socket whose
 * connect timed out (its backlog full: the broker no longer accepts there) gets no more. */
static void open_silent(int n, int settle_ms)
{
	char stalled[IDLE_MAX_SOCKETS] = { 0 };
	long failed = 0, skipped = 0, lost;

	for (int i = 0; i < n; i++) {
		int s = i % nsock, fd;

		if (stalled[s]) {
			skipped++;
			continue;
		}
		fd = unix_connect(sockets[s], IDLE_IO_TIMEOUT_S);
		if (fd < 0) {
			note_why("connect to %s: %s", sockets[s], strerror(errno));
			stalled[s] = errno == EAGAIN;
			failed++;
			continue;
		}
		fds[nfds++] = fd;
	}
	settle(settle_ms);
	lost = sweep();
	printf("silent asked=%d opened=%d connect_failed=%ld skipped=%ld lost=%ld open=%ld", n,
	       nfds, failed, skipped, lost, nfds - lost);
	print_broker();
	print_why("silent");
}

static void keepalive_all(int settle_ms)
{
	pthread_t t[IDLE_THREADS];
	long lost;
	int open = 0;

	for (int i = 0; i < nfds; i++)
		open += fds[i] >= 0;
	for (int i = 0; i < IDLE_THREADS; i++)
		if (pthread_create(&t[i], NULL, keepalive_worker, NULL)) {
			fprintf(stderr, "idle-conns: cannot start a thread\n");
			exit(1);
		}
	for (int i = 0; i < IDLE_THREADS; i++)
		pthread_join(t[i], NULL);
	settle(settle_ms);
	lost = sweep();
	printf("keepalive asked=%d ok=%ld failed=%ld closed_after=%ld lost=%ld open=%ld", open,
	       atomic_load(&n_ok), atomic_load(&n_failed), atomic_load(&n_closed), lost,
	       atomic_load(&n_ok) - lost);
	print_broker();
	print_why("keepalive");
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Phase 3: per session, a new connection and one request, timed from connect to the end of
 * the response; the held connections stay open meanwhile. */
static void one_per_session(void)
{
	uint64_t lat[IDLE_MAX_SOCKETS];
	int served = 0, keep;

	for (int s = 0; s < nsock; s++) {
		uint64_t t0 = now_ns();
		int fd = unix_connect(sockets[s], IDLE_SESSION_TIMEOUT_S);

		if (fd < 0) {
			note_why("connect to %s: %s", sockets[s], strerror(errno));
			continue;
		}
		if (!exchange(fd, sess_req, sess_expect, &keep))
			lat[served++] = now_ns() - t0;
		close(fd);
	}
	qsort(lat, (size_t)served, sizeof(lat[0]), cmp_u64);
#define RANK(p) lat[(size_t)((p)*served + 0.999999) - 1]
	printf("sessions sessions=%d served=%d", nsock, served);
	if (served)
		printf(" p50_ms=%.3f p99_ms=%.3f max_ms=%.3f", (double)RANK(0.5) / 1e6,
		       (double)RANK(0.99) / 1e6, (double)lat[served - 1] / 1e6);
	putchar('\n');
	print_why("sessions");
	long still = sweep();
	printf("after held_lost=%ld", still);
	print_broker();
	print_why("after");
}

int main(int argc, char **argv)
{
	int n = 10000, settle = 1000, o;

	while ((o = getopt(argc, argv, "p:n:s:i:I:u:U:")) != -1) {
		switch (o) {
		case 'p':
			broker_pid = atoi(optarg);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 's':
			settle = atoi(optarg);
			break;
		case 'i':
			snprintf(idle_req, sizeof(idle_req), "GET %s HTTP/1.1\r\n\r\n", optarg);
			break;
		case 'I':
			idle_expect = optarg;
			break;
		case 'u':
			snprintf(sess_req, sizeof(sess_req),
				 "GET %s HTTP/1.1\r\nConnection: close\r\n\r\n", optarg);
			break;
		case 'U':
			sess_expect = optarg;
			break;
		default:
			goto usage;
		}
	}
	for (; optind < argc && nsock < IDLE_MAX_SOCKETS; optind++)
		sockets[nsock++] = argv[optind];
	if (broker_pid <= 0 || n < 1 || settle < 0 || !idle_req[0] || !sess_req[0] || !nsock ||
	    optind != argc)
		goto usage;
	fds = calloc((size_t)n, sizeof(*fds));
	if (!fds) {
		fprintf(stderr, "idle-conns: out of memory\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	printf("base");
	print_broker();
	open_silent(n, settle);
	keepalive_all(settle);
	one_per_session();
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	return 0;
usage:
	fprintf(stderr,
		"usage: idle-conns -p BROKER-PID -i IDLE-TARGET [-I EXPECT] -u URL [-U EXPECT]\n"
		"                  [-n CONNS] [-s SETTLE-MS] SESSION-SOCK...\n"
		"  -i: the target of the one keep-alive request on each held connection\n"
		"  -u: the absolute URL each session is asked once more, on a new connection\n");
	return 2;
}
