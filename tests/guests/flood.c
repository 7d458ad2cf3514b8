/* tests/guests/flood.c: writes console lines forever (the test serial port, or the 8250 with
 * --machine: the same port). Run with a stdout nobody reads, the VMM's console write blocks
 * once the pipe is full: --timeout-ms must still end the run with VMM_EXIT_TIMEOUT. */
#include "tests/guests/guest.h"

int guest_main(void)
{
	for (uint64_t n = 0;; n++) {
		guest_puts("flood: a console line that nobody reads, number ");
		guest_putu(n);
		guest_putc('\n');
	}
}
