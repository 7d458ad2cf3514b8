/* tests/guests/start.S: entry of the C test guests — own stack, call guest_main(), exit with
 * its return value through the exit port. */
#include "vmm/test_guest_abi.h"

	.section .text.start, "ax"
	.code64
	.globl _start
_start:
	/* Our own stack, so a guest does not depend on where the VMM put RSP. */
	lea	stack_top(%rip), %rsp
	call	guest_main
	mov	$TG_PORT_EXIT, %dx
	out	%eax, %dx
1:	cli
	hlt
	jmp	1b

	.section .bss
	.balign 16
	.skip 16384
stack_top:
