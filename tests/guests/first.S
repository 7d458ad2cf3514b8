/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/first.S: the bulkhead-vmm side of the start-up benchmark (bench/vmm-startup.sh):
 * the first instruction writes '!' to the serial port, then the guest exits with code 0. */
#include "lib/test_guest_abi.h"

	.section .text.start, "ax"
	.code64
	.globl _start
_start:
	mov	$TG_PORT_SERIAL, %dx
	mov	$'!', %al
	out	%al, %dx
	mov	$TG_PORT_EXIT, %dx
	xor	%eax, %eax
	out	%eax, %dx
1:	hlt
	jmp	1b
