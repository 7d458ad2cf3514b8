/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/badexit.S: writes an exit code above TG_EXIT_MAX, which must not alias a VMM
 * status: the run ends with VMM_EXIT_BAD_CODE (104). */
#include "lib/test_guest_abi.h"

	.section .text.start, "ax"
	.code64
	.globl _start
_start:
	mov	$(TG_EXIT_MAX + 101), %eax
	mov	$TG_PORT_EXIT, %dx
	out	%eax, %dx
1:	jmp	1b
