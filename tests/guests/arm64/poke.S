/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/guests/arm64/poke.S: arm64 test guests for bulkhead-vmm, one per CASE (assembled with
 * --defsym CASE=N by tests/nested/arm64.sh), each an arm64 Image (the 64-byte header, then
 * code that runs with the MMU off, at EL1). They speak through the 8250's transmit register
 * and end with PSCI SYSTEM_OFF; any exception they take prints "trap" and powers off.
 *   1  hello: "poke: hello" and off
 *   2  gic: writes every word of the GIC distributor and of vCPU 0's redistributor, arms
 *      the virtual timer, asks PSCI for a function that does not exist, then writes an EL2
 *      timer register (CNTVOFF_EL2), which must trap in the guest
 *   3  nisv: a load pair from the UART's page, an access KVM cannot describe to user space
 *   4  wild: a store to an address with no RAM and no device, then "poke: wild done"
 *   5  spin: a loop that never ends
 */
	.equ	UART, 0x09000000
	.equ	GICD, 0x08000000
	.equ	GICR, 0x080a0000
	.equ	WILD, 0x40000000
	.equ	PSCI_SYSTEM_OFF, 0x84000008

	.text
	.globl	_start
_start:
	b	main			/* code0 */
	.word	0			/* code1 */
	.quad	0			/* text_offset */
	.quad	_end - _start		/* image_size */
	.quad	0xa			/* flags: little-endian, 4 KiB pages, anywhere in RAM */
	.quad	0, 0, 0
	.word	0x644d5241		/* "ARM\x64" */
	.word	0

main:
	adr	x1, vectors
	msr	vbar_el1, x1
	isb
	ldr	x19, =UART
.if CASE == 1
	adr	x1, msg_hello
	bl	puts
.elseif CASE == 2
	ldr	x20, =GICD		/* every word of the distributor: the kernel's vGIC */
	mov	x21, #0x10000
	mov	w22, #0xffffffff
1:	str	w22, [x20]		/* no writeback: KVM decodes only accesses with a syndrome */
	add	x20, x20, #4
	subs	x21, x21, #4
	b.ne	1b
	ldr	x20, =GICR		/* and of vCPU 0's redistributor (GICv3) */
	mov	x21, #0x20000
2:	str	w22, [x20]
	add	x20, x20, #4
	subs	x21, x21, #4
	b.ne	2b
	msr	cntv_cval_el0, xzr	/* the virtual timer, due at once (masked here) */
	mov	x1, #1
	msr	cntv_ctl_el0, x1
	ldr	x0, =0x8400dead		/* no such PSCI function: NOT_SUPPORTED (-1) */
	hvc	#0
	cmn	x0, #1
	b.ne	3f
	adr	x1, msg_refused
	bl	puts
3:	adr	x1, msg_gic
	bl	puts
	mov	x1, #0
	msr	cntvoff_el2, x1		/* EL2's: undefined at EL1, so it traps here */
	adr	x1, msg_after
	bl	puts
.elseif CASE == 3
	ldp	x1, x2, [x19]
	adr	x1, msg_after
	bl	puts
.elseif CASE == 4
	ldr	x20, =WILD
	mov	w1, #0x5a
	str	w1, [x20]
	ldr	w1, [x20]
	adr	x1, msg_wild
	bl	puts
.elseif CASE == 5
4:	b	4b
.endif
off:
	ldr	x0, =PSCI_SYSTEM_OFF
	hvc	#0
5:	b	5b

/* puts: the NUL-terminated string at x1, byte by byte into the 8250's THR. */
puts:
	ldrb	w2, [x1], #1
	cbz	w2, 6f
	strb	w2, [x19]
	b	puts
6:	ret

msg_hello:	.asciz	"poke: hello\n"
msg_refused:	.asciz	"poke: unknown PSCI function refused\n"
msg_gic:	.asciz	"poke: gic written\n"
msg_wild:	.asciz	"poke: wild done\n"
msg_after:	.asciz	"poke: not trapped\n"
msg_trap:	.asciz	"poke: trap\n"
	.ltorg

/* Every exception: say so and power off. */
	.balign	2048
vectors:
	.rept	16
	ldr	x19, =UART
	adr	x1, msg_trap
	bl	puts
	b	off
	.ltorg
	.balign	128
	.endr
_end:
