/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/ring3.S: the doctor's ring-3 syscall probe. Ring 0 enables SYSCALL, drops to
 * ring 3 with SYSRETQ, ring 3 executes SYSCALL; the handler prints '0' + (CS & 3) and a
 * newline, then exits with code 0. A correct KVM prints "0"; hosts whose SYSCALL lands in
 * ring 3 (kvm_pvm) print "3". Output, not exit status, is the verdict. */
#include "lib/test_guest_abi.h"

#define MSR_EFER 0xc0000080
#define MSR_STAR 0xc0000081
#define MSR_LSTAR 0xc0000082
#define MSR_SFMASK 0xc0000084
#define EFER_SCE 0x1
/* STAR[47:32] = 0x08: SYSCALL loads CS 0x08, SS 0x10. STAR[63:48] = 0x18: SYSRETQ loads
 * CS 0x28|3, SS 0x20|3. Matches the VMM's boot GDT (vmm/x86/gdt.h). */
#define STAR_HIGH 0x00180008
/* Bit 1 is reserved-one; IF stays 0. IOPL 3 as well, though we report through MMIO: kvm_pvm
 * faults port I/O from guest ring 3 whatever IOPL says, and a handler wrongly left in ring 3
 * must still be able to speak. The identity map is user-accessible, MMIO included. */
#define USER_RFLAGS 0x3002

	.section .text.start, "ax"
	.code64
	.globl _start
_start:
	mov	$MSR_EFER, %ecx
	rdmsr
	or	$EFER_SCE, %eax
	wrmsr

	mov	$MSR_STAR, %ecx
	xor	%eax, %eax
	mov	$STAR_HIGH, %edx
	wrmsr

	mov	$MSR_LSTAR, %ecx
	lea	handler(%rip), %rax
	mov	%rax, %rdx
	shr	$32, %rdx
	wrmsr

	/* SFMASK 0: SYSCALL clears no RFLAGS bits, so the handler sees what ring 3 had. */
	mov	$MSR_SFMASK, %ecx
	xor	%eax, %eax
	xor	%edx, %edx
	wrmsr

	/* 32-bit mov zero-extends: the MMIO window's address for both sides below. */
	mov	$TG_MMIO_BASE, %ebx
	lea	user(%rip), %rcx
	mov	$USER_RFLAGS, %r11
	sysretq

user:
	syscall
	/* Only reached if SYSCALL returned here without running the handler. */
	movb	$'?', TG_MMIO_SERIAL(%rbx)
	movb	$'\n', TG_MMIO_SERIAL(%rbx)
	movl	$1, TG_MMIO_EXIT(%rbx)
1:	jmp	1b

handler:
	mov	%cs, %eax
	and	$3, %eax
	add	$'0', %eax
	movb	%al, TG_MMIO_SERIAL(%rbx)
	movb	$'\n', TG_MMIO_SERIAL(%rbx)
	movl	$0, TG_MMIO_EXIT(%rbx)
2:	jmp	2b
