/* SPDX-License-Identifier: Apache-2.0 */
/* bench/http_load.h: http-load's pieces — what every connection does (set once by main in
 * http_load_main.c) and one connection's worker (http_load.c). */
#ifndef BULKHEAD_BENCH_HTTP_LOAD_H
#define BULKHEAD_BENCH_HTTP_LOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>
#include <openssl/ssl.h>

#define LOAD_BODY_KEEP	  65536 /* body bytes kept per response for --expect */
#define LOAD_IO_TIMEOUT_S 15	/* a stalled server fails the run instead of hanging it */

/* What every connection does; set once in main(). */
struct load_cfg {
	const char *sock; /* --proxy-unix: the broker's socket */
	char host[256]; /* --direct: where to connect; --direct, --connect: the name TLS verifies */
	char port[8];
	SSL_CTX *tls;	/* --direct and --connect */
	int tunnel;	/* --connect: CONNECT host:port, then TLS inside against the session CA */
	int keepalive;	/* 0 (--no-keepalive): a new connection (and handshake) per request */
	char req[1200]; /* the request, identical every time */
	size_t req_len;
	const char *expect; /* --expect: the body must contain this */
	long body_len;	    /* --body-length, or learnt from the first response (-1: not yet) */
	long total;	    /* -n: measured requests over all connections */
	double seconds;	    /* -d: or for this long */
	int warmup;	    /* -w: requests per connection before measuring */
};
extern struct load_cfg L;

/* The run, shared by the connections and main(). */
extern _Atomic long load_body_len_seen;
extern atomic_long load_tickets;    /* -n: measured requests still to hand out */
extern atomic_int load_failed;	    /* one connection failed: the others stop */
extern pthread_barrier_t load_warm; /* twice: all connections warmed up; the clock has started */
extern uint64_t load_deadline_ns;

struct worker {
	pthread_t t;
	int fd;
	SSL *ssl;
	uint64_t *lat; /* ns per measured request */
	size_t n, cap;
	unsigned long reconnects; /* the server closed a kept-alive connection */
	unsigned long served;	  /* responses on the current connection */
	uint64_t end_ns;
	char err[512];
	/* the response being read */
	http_parser p;
	int done;
	size_t body_n;
	char body[LOAD_BODY_KEEP];
};

uint64_t load_now_ns(void);
/* One connection's thread: warm up, wait for the clock, measure. */
void *load_work(void *worker);

#endif
