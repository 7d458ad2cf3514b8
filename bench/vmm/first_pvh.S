/* SPDX-License-Identifier: Apache-2.0 */
/* bench/vmm/first_pvh.S: the QEMU side of the start-up benchmark — a PVH ELF whose first
 * instruction writes '!' to the serial port, then leaves through isa-debug-exit (0xf4).
 * Entered by QEMU in 32-bit protected mode at the address in its Xen PVH note. */
#define XEN_ELFNOTE_PHYS32_ENTRY 18

	.section .note.pvh, "a"
	.balign 4
	.long	4		/* name size: "Xen\0" */
	.long	4		/* desc size */
	.long	XEN_ELFNOTE_PHYS32_ENTRY
	.asciz	"Xen"
	.long	_start

	.section .text, "ax"
	.code32
	.globl _start
_start:
	mov	$0x3f8, %dx
	mov	$'!', %al
	out	%al, %dx
	mov	$0xf4, %dx
	xor	%eax, %eax
	out	%al, %dx
1:	hlt
	jmp	1b
