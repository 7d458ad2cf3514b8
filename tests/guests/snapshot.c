/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/snapshot.c: (--machine, any --cpus) work with its state in registers, in an
 * SSE register and in RAM on every vCPU, long enough to be saved mid-way and restored in
 * another bulkhead-vmm. Prints "snapshot: ready" once every vCPU has started, then one line
 * per tenth of vCPU 0's work, then "snapshot: result N" and exits 7. The result depends only
 * on the work, so a run that was saved and restored must print what an uninterrupted one
 * prints; a lost register, SSE register or page changes it (or exits 1..3 when a check
 * fails outright). */
#include "tests/guests/guest.h"

#define MAX_CPUS   32
#define STEPS	   (600ULL * 1000 * 1000) /* per vCPU: seconds in L1, ~0.5 s on hardware */
#define TENTHS	   10
#define SPIN_LIMIT 4000000000ULL

static volatile uint64_t result[MAX_CPUS];
static volatile uint32_t started[MAX_CPUS], done[MAX_CPUS];
/* A page per vCPU that the work keeps rewriting: RAM has to come back too. */
static volatile uint64_t scratch[MAX_CPUS][512] __attribute__((aligned(4096)));

static uint64_t xorshift(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* STEPS rounds; vCPU 0 reports each tenth. An SSE register holds a value across the work. */
static uint64_t work(uint64_t index, int report)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ (index + 1), xmm_in = x * 3, xmm_out;
	volatile uint64_t *page = scratch[index];

	__asm__ volatile("movq %0, %%xmm5" : : "r"(xmm_in));
	for (uint64_t t = 0; t < TENTHS; t++) {
		for (uint64_t i = 0; i < STEPS / TENTHS; i++) {
			x = xorshift(x);
			page[x & 511] += x;
		}
		if (report) {
			guest_puts("snapshot: tenth ");
			guest_putu(t + 1);
			guest_putc('\n');
		}
	}
	__asm__ volatile("movq %%xmm5, %0" : "=r"(xmm_out));
	if (xmm_out != xmm_in)
		return 0; /* the SSE register did not survive */
	for (unsigned i = 0; i < 512; i++)
		x ^= page[i] * (i + 1);
	return x ? x : 1;
}

void guest_ap(uint64_t index, uint64_t ncpus)
{
	(void)ncpus;
	started[index] = 1;
	result[index] = work(index, 0);
	done[index] = 1;
}

int guest_main(void)
{
	uint64_t n = guest_entry_regs.rcx;
	if (n < 1 || n > MAX_CPUS)
		return 1;
	for (uint64_t i = 1; i < n; i++) {
		uint64_t spins = 0;
		while (!started[i])
			if (++spins > SPIN_LIMIT)
				return 2;
	}
	guest_puts("snapshot: ready\n");
	uint64_t sum = work(0, 1);
	if (!sum)
		return 3;
	for (uint64_t i = 1; i < n; i++) {
		while (!done[i])
			__asm__ volatile("pause");
		if (!result[i])
			return 3;
		sum ^= result[i] * (2 * i + 1);
	}
	guest_puts("snapshot: result ");
	guest_putu(sum);
	guest_putc('\n');
	return 7;
}
