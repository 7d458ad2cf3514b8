/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/touch.c: the memory benchmark's guest (bench/vmm-memory.sh): writes one byte
 * per 4 KiB page of TOUCH_MIB MiB above 8 MiB, says "touched" on serial, then spins until the
 * harness has read the VMM's RSS and kills it. */
#include "tests/guests/guest.h"

#define TOUCH_MIB  32
#define TOUCH_BASE (8ULL << 20)

int guest_main(void)
{
	for (uint64_t a = TOUCH_BASE; a < TOUCH_BASE + (TOUCH_MIB << 20); a += 4096)
		*(volatile uint8_t *)a = 1;
	guest_puts("touched 32\n");
	for (;;)
		__asm__ volatile("pause");
}
