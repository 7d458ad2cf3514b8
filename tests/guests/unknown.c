/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/unknown.c: hostile-ish probing of addresses nobody serves — unknown ports and
 * MMIO must read as all-ones and never stop the VM. Exit code 0 = all as documented; n > 0
 * names the first check that failed. */
#include "tests/guests/guest.h"

/* Inside the 4 GiB identity map, far above RAM, below the KVM TSS pages. */
#define UNKNOWN_MMIO 0xd0000000UL
#define UNKNOWN_PORT 0x1234

int guest_main(void)
{
	volatile uint8_t *m8 = (volatile uint8_t *)UNKNOWN_MMIO;
	volatile uint32_t *m32 = (volatile uint32_t *)(UNKNOWN_MMIO + 0x100);
	volatile uint64_t *m64 = (volatile uint64_t *)(UNKNOWN_MMIO + 0x200);

	outb(UNKNOWN_PORT, 0x55);
	if (inb(UNKNOWN_PORT) != 0xff)
		return 1;
	if (inw(UNKNOWN_PORT) != 0xffff)
		return 2;
	if (inl(UNKNOWN_PORT) != 0xffffffffu)
		return 3;
	*m8 = 0x12;
	if (*m8 != 0xff)
		return 4;
	if (*m32 != 0xffffffffu)
		return 5;
	if (*m64 != 0xffffffffffffffffULL)
		return 6;
	/* Reads of the exit and mark ports answer all-ones too (they are write-only). */
	if (inl(TG_PORT_MARK) != 0xffffffffu)
		return 7;
	guest_puts("unknown: ok\n");
	return 0;
}
