/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/spin.S: never stops — for --timeout-ms, which must end the run with
 * VMM_EXIT_TIMEOUT (124) even though the guest never exits to the VMM by itself. */
	.section .text.start, "ax"
	.code64
	.globl _start
_start:
1:	jmp	1b
