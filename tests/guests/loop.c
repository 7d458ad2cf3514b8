/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/loop.c: the doctor's kernel-mode speed probe — a calibrated ring-0 dec/jnz
 * loop bracketed by timestamp marks, a few rounds so the host can take the fastest. */
#include "tests/guests/guest.h"

/* 2 instructions per iteration: 3 x 200k iterations = 1.2 M instructions, about 0.8 s where
 * ring 0 is emulated (~1.5 M/s) and well under a millisecond per round where it is native.
 * The doctor reads both numbers from the output line, so they may change freely. */
#define LOOP_ITERATIONS		 200000
#define LOOP_ROUNDS		 3
#define LOOP_INSNS_PER_ITERATION 2

int guest_main(void)
{
	for (int r = 0; r < LOOP_ROUNDS; r++) {
		uint64_t n = LOOP_ITERATIONS;
		guest_mark(TG_MARK_START);
		__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n));
		guest_mark(TG_MARK_END);
	}
	guest_puts("loop iterations=");
	guest_putu(LOOP_ITERATIONS);
	guest_puts(" rounds=");
	guest_putu(LOOP_ROUNDS);
	guest_puts(" insns_per_iteration=");
	guest_putu(LOOP_INSNS_PER_ITERATION);
	guest_putc('\n');
	return 0;
}
