/* SPDX-License-Identifier: Apache-2.0 */
/* lib/test_guest_abi.h: the port-I/O and MMIO contract between bulkhead-vmm --test-guest and the
 * freestanding guests in tests/guests/. Shared by both sides; assembler-safe (macros only). */
#ifndef BULKHEAD_LIB_TEST_GUEST_ABI_H
#define BULKHEAD_LIB_TEST_GUEST_ABI_H

/* Bumped whenever a port, value or the entry state below changes meaning. */
#define TG_ABI_VERSION 2

/*
 * Entry state: 64-bit long mode, CPL 0, at TG_LOAD_GPA (the binary's first byte), with
 *   - RAM identity-mapped (VA == PA) for the first 4 GiB with 2 MiB pages, U/S set
 *     (so a probe may drop to ring 3), no NX, CR4 = PAE|OSFXSR|OSXMMEXCPT, EFER = LME|LMA;
 *   - the boot GDT (vmm/x86/gdt.h): 0x08 kernel code64, 0x10 kernel data, 0x18 user code32
 *     (SYSRET base), 0x20 user data, 0x28 user code64, 0x30 64-bit TSS;
 *   - no IDT (limit 0): any exception triple-faults; interrupts off (RFLAGS = 0x2);
 *   - RSP = TG_STACK_TOP; RDI = TG_ABI_VERSION; RDX = this vCPU's index (= APIC ID);
 *     RCX = the number of vCPUs (--cpus); RSI = the zero page (X86_ZEROPAGE_GPA) with
 *     --machine, else 0; other GPRs zero.
 * Every vCPU starts there at once (no INIT/SIPI), each must pick its own stack by RDX.
 * --machine adds what Linux mode has: in-kernel PIC/IOAPIC/LAPIC and PIT, the 8250 UART at
 * 0x3f8 (IRQ 4) instead of the serial sink, the i8042 (reset -> VMM_EXIT_RESET), the
 * boot-timer port, the zero page (e820, --cmdline, --initrd) and the MP table; and HLT no
 * longer ends the run (the in-kernel LAPIC waits for an interrupt).
 * RAM is zero-filled, so a binary's .bss needs no clearing.
 */
#define TG_LOAD_GPA  0x100000
#define TG_STACK_TOP 0x80000

/* out (byte): one byte of serial output, copied to the VMM's stdout. Reads of 0x3f8..0x3ff
 * answer like an idle 16550 (LSR = transmitter empty), so polling drivers work. */
#define TG_PORT_SERIAL 0x3f8

/* out (byte, word or dword at the base port): ends the run; the value (0..TG_EXIT_MAX) becomes
 * the VMM's exit status. Larger values end it with VMM_EXIT_BAD_CODE (lib/vmm_exit.h).
 * Each of these two devices spans TG_PORT_WIDTH ports so that a dword access stays inside. */
#define TG_PORT_WIDTH 4
#define TG_PORT_EXIT  0x500
#define TG_EXIT_MAX   99

/* out (byte, word or dword at the base port): timestamp mark. The VMM records CLOCK_MONOTONIC
 * when it sees the write and, at the end of the run, prints one stderr line per mark:
 *     bulkhead-vmm: mark VALUE NS
 * with NS the nanoseconds since the VM was created. A loop bracketed by TG_MARK_START and
 * TG_MARK_END is timed to within one VM exit. At most TG_MARKS_MAX marks are kept. */
#define TG_PORT_MARK  0x504
#define TG_MARK_START 1
#define TG_MARK_END   2
#define TG_MARKS_MAX  64

/* The same three registers as MMIO, for code that cannot use port I/O: ring 3 on hosts that
 * do not honour IOPL for guest user mode (kvm_pvm). Inside the identity map, outside RAM,
 * clear of the usual APIC/IOAPIC addresses. Byte writes to SERIAL; byte..dword to EXIT, MARK. */
#define TG_MMIO_BASE   0xfe000000
#define TG_MMIO_SIZE   0x1000
#define TG_MMIO_SERIAL 0x0
#define TG_MMIO_EXIT   0x4
#define TG_MMIO_MARK   0x8

#endif
