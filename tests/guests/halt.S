/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/halt.S: HLT with interrupts off, nothing can wake it: the VMM must end the
 * run with VMM_EXIT_HALTED (lib/vmm_exit.h). */
	.section .text.start, "ax"
	.code64
	.globl _start
_start:
	cli
	hlt
	/* Not reached; if HLT ever returned, spin so the test sees a timeout instead. */
1:	jmp	1b
