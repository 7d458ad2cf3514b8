/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/start.S: entry of the C test guests — keep the entry registers for checks,
 * give each vCPU its own stack (by RDX, the vCPU index), run guest_main() on vCPU 0 and
 * exit with its value; other vCPUs run guest_ap(index, count), by default a halt loop. */
#include "lib/test_guest_abi.h"

#define STACK_SIZE 4096
#define MAX_CPUS   32

	.section .text.start, "ax"
	.code64
	.globl _start
_start:
	/* Only vCPU 0 records its entry state: the others would race on it. */
	test	%rdx, %rdx
	jnz	1f
	mov	%rdi, guest_entry_regs+0(%rip)
	mov	%rsi, guest_entry_regs+8(%rip)
	mov	%rdx, guest_entry_regs+16(%rip)
	mov	%rcx, guest_entry_regs+24(%rip)
	mov	%rsp, guest_entry_regs+32(%rip)
	pushfq
	pop	%rax
	mov	%rax, guest_entry_regs+40(%rip)
1:	/* Stack of vCPU n: stacks + (n + 1) * STACK_SIZE, n clamped to the table. */
	cmp	$MAX_CPUS, %rdx
	jae	3f
	lea	stacks(%rip), %rsp
	lea	1(%rdx), %rax
	shl	$12, %rax
	add	%rax, %rsp
	test	%rdx, %rdx
	jnz	2f
	call	guest_main
	mov	$TG_PORT_EXIT, %dx
	out	%eax, %dx
3:	cli
	hlt
	jmp	3b
2:	mov	%rcx, %rsi
	mov	%rdx, %rdi
	call	guest_ap
	jmp	3b

	/* Weak default for guests with nothing to do on other vCPUs. */
	.weak	guest_ap
guest_ap:
	cli
	hlt
	jmp	guest_ap

	.section .bss
	.balign 16
	.globl	guest_entry_regs
guest_entry_regs:
	.skip	48
	.balign 4096
stacks:
	.skip	STACK_SIZE * MAX_CPUS
