/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/flood.c: writes console lines forever (the test serial port, or the 8250 with
 * --machine: the same port), a 4 KiB block of them per VM exit (rep outsb), so a pipe nobody
 * reads is full within milliseconds even where exits are slow (nested or emulated KVM). The
 * VMM's console write then blocks: --timeout-ms must still end the run (VMM_EXIT_TIMEOUT). */
#include "tests/guests/guest.h"

#define FLOOD_BLOCK 4096

static char block[FLOOD_BLOCK];

int guest_main(void)
{
	static const char line[] = "flood: a console line that nobody reads\n";
	for (unsigned i = 0; i < FLOOD_BLOCK; i++)
		block[i] = line[i % (sizeof(line) - 1)];
	for (;;) {
		const char *p = block;
		uint64_t n = FLOOD_BLOCK;
		__asm__ volatile("rep outsb"
				 : "+S"(p), "+c"(n)
				 : "d"((uint16_t)TG_PORT_SERIAL)
				 : "memory");
	}
}
