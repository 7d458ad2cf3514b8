/* SPDX-License-Identifier: Apache-2.0 */
/* bench/scrub_bench.c: the response scrubber's throughput on one core, with three secrets of
 * 28 to 40 bytes loaded, over three kinds of body: prose (few bytes may begin an escape),
 * hex and base64 (a hex pair at most positions), and hostile text (escape prefixes,
 * backslashes, references and secret prefixes everywhere). Fed in 16 KiB reads; prints MB/s
 * per kind, the median of RUNS runs. Usage: scrub-bench [RUNS] [MIB] */
#include "broker/scrub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int sink(void *arg, const uint8_t *b, size_t n)
{
	(void)b;
	*(size_t *)arg += n;
	return 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(uint8_t *b, size_t n, int kind)
{
	static const char *const hostile[] = { "%25",	  "\\u00", "ghp_S3cretValu", "Z2hwX1Mz",
					       "\r\n",	  "&#x",   "6768705f",	     "\\\\",
					       "&lowbar", "\\13",  "\\u{5",	     "%u00" };
	static const char prose[] = "the quick brown fox jumps over the lazy dog, again. ";
	static const char hexb64[] = "0123456789abcdefABCDEFghijklmnopqrstuvwxyz+/";
	size_t i = 0;

	while (i < n) {
		if (kind == 0) {
			b[i] = (uint8_t)prose[i % (sizeof(prose) - 1)];
			i++;
		} else if (kind == 1) {
			b[i++] = (uint8_t)hexb64[next() % (sizeof(hexb64) - 1)];
		} else {
			const char *p = hostile[next() % 12];
			size_t k = strlen(p) < n - i ? strlen(p) : n - i;

			memcpy(b + i, p, k);
			i += k;
		}
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const secrets[] = { "ghp_S3cretValue0123456789abcdef",
					       "sk-live-ABCDEFGHIJ0123456789klmnopqrstuv",
					       "xoxb-1234-5678-abcdefghijkl" };
	static const char *const names[] = { "prose", "hex/base64", "hostile" };
	int runs = argc > 1 ? atoi(argv[1]) : 5, kind, r, i;
	size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 16, n = mib << 20;
	uint8_t *buf = malloc(n);
	struct scrub s;

	if (!buf || runs < 1 || runs > 100)
		return 2;
	scrub_init(&s);
	for (i = 0; i < 3; i++)
		if (scrub_add_secret(&s, (const uint8_t *)secrets[i], strlen(secrets[i])))
			return 1;
	printf("lag %zu\n", scrub_lag(&s));
	for (kind = 0; kind < 3; kind++) {
		double mbs[100];

		fill(buf, n, kind);
		for (r = 0; r < runs; r++) {
			size_t off, out = 0;
			double t0 = now();

			scrub_reset(&s);
			for (off = 0; off < n; off += 16384)
				scrub_feed(&s, buf + off, n - off < 16384 ? n - off : 16384, sink,
					   &out);
			scrub_flush(&s, sink, &out);
			mbs[r] = (double)n / 1e6 / (now() - t0);
		}
		qsort(mbs, (size_t)runs, sizeof(double), cmp);
		printf("%-11s %8.1f MB/s (median of %d, %zu MiB each)\n", names[kind],
		       mbs[runs / 2], runs, mib);
	}
	scrub_free(&s);
	free(buf);
	return 0;
}
