/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/cpus.c: (--machine --cpus N) every vCPU starts, and each sees its own APIC ID
 * in CPUID leaf 1, in leaf 0xb and in its LAPIC; CPUID shows the hypervisor bit and N cores.
 * Prints "cpus: N ok" and exits 0; n > 0 names the first failed check. */
#include "tests/guests/guest.h"
#include "vmm/x86/layout.h"

#define MAX_CPUS     32
#define LAPIC_ID_REG (X86_LAPIC_GPA + 0x20)
#define SPIN_LIMIT   200000000ULL /* far more than APs need even under emulation */

/* Per vCPU: 1 + its verdict, written once by that vCPU. */
static volatile uint32_t seen[MAX_CPUS];

static uint32_t check_self(uint64_t index, uint64_t ncpus)
{
	uint32_t r[4];
	guest_cpuid(1, 0, r);
	if ((r[1] >> 24) != index)
		return 1; /* initial APIC ID */
	if (!(r[2] & (1u << 31)))
		return 2; /* hypervisor bit */
	if (ncpus > 1 && ((r[1] >> 16) & 0xff) != ncpus)
		return 3; /* logical CPUs per package */
	uint32_t apic = *(volatile uint32_t *)LAPIC_ID_REG >> 24;
	if (apic != index)
		return 4;
	guest_cpuid(0, 0, r);
	if (r[0] >= 0xb) {
		guest_cpuid(0xb, 1, r);
		if (r[3] != index)
			return 5; /* x2APIC ID */
		if ((r[1] & 0xffff) != ncpus)
			return 6; /* logical processors at the core level */
	}
	return 0;
}

void guest_ap(uint64_t index, uint64_t ncpus)
{
	seen[index] = 1 + check_self(index, ncpus);
}

int guest_main(void)
{
	uint64_t n = guest_entry_regs.rcx;
	if (n < 1 || n > MAX_CPUS)
		return 1;
	seen[0] = 1 + check_self(0, n);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t spins = 0;
		while (!seen[i])
			if (++spins > SPIN_LIMIT)
				return 2; /* vCPU i never ran */
		if (seen[i] != 1)
			return (int)(10 * seen[i] +
				     (i > 9 ? 9 : i)); /* 2x..7x: which check, which CPU */
	}
	guest_puts("cpus: ");
	guest_putu(n);
	guest_puts(" ok\n");
	return 0;
}
