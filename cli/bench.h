/* SPDX-License-Identifier: Apache-2.0 */
/* cli/bench.h: `bulkhead bench` — boot latency of the engines, measured from outside. */
#ifndef BULKHEAD_CLI_BENCH_H
#define BULKHEAD_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* Sorts v[0..n) and returns the q-quantile (0..1) by nearest rank; 0 for n == 0. */
uint64_t bench_quantile(uint64_t *v, size_t n, double q);

int cmd_bench(int argc, char **argv);

#endif
