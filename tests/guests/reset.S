/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/reset.S: (--machine) asks the i8042 to pulse the CPU reset line, as Linux's
 * reboot=k does: the VMM must end with VMM_EXIT_RESET in test mode. */
	.section .text.start, "ax"
	.code64
	.globl _start
_start:
	/* Wait for the controller's input buffer to drain, like the kernel's kb_wait(). */
1:	inb	$0x64, %al
	test	$0x02, %al
	jnz	1b
	mov	$0xfe, %al
	outb	%al, $0x64
	/* Not reached if the reset worked; spin so the test sees a timeout instead. */
2:	jmp	2b
