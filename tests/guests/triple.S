/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/triple.S: an exception with no IDT (limit 0, as the VMM enters guests) faults,
 * double-faults, then triple-faults: the VMM must end with VMM_EXIT_SHUTDOWN. */
	.section .text.start, "ax"
	.code64
	.globl _start
_start:
	/* Load an empty IDT ourselves rather than trusting the entry state. */
	lidt	empty_idt(%rip)
	/* A non-canonical address: #GP, which no IDT can deliver. */
	movabs	$0x8000000000000000, %rax
	mov	(%rax), %rax
1:	jmp	1b

	.section .rodata
	.balign 8
empty_idt:
	.word	0
	.quad	0
