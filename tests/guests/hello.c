/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/hello.c: prints one known line and exits with a known code — the smallest
 * end-to-end check of serial output and the exit port. */
#include "tests/guests/guest.h"

/* tests/e2e/test_doctor.sh checks both, byte for byte. */
#define HELLO_EXIT_CODE 42

int guest_main(void)
{
	guest_puts("hello from a bulkhead test guest\n");
	return HELLO_EXIT_CODE;
}
