/* vmm/boot_timer_abi.h: the boot-timer contract between bulkhead-init (guest) and
 * bulkhead-vmm, and the line the VMM prints for `bulkhead bench boot`. Version 1. */
#ifndef BULKHEAD_VMM_BOOT_TIMER_ABI_H
#define BULKHEAD_VMM_BOOT_TIMER_ABI_H

/* bulkhead-init's very first act: outb(BOOT_TIMER_MAGIC, BOOT_TIMER_PORT) (after ioperm).
 * The port is unassigned on a PC, so other VMMs (QEMU) ignore the write. */
#define BOOT_TIMER_PORT	 0x440
#define BOOT_TIMER_MAGIC 123

/* On that write the VMM prints one stderr line, all values CLOCK_MONOTONIC nanoseconds:
 *   bulkhead-vmm: boot-timer main=NS vm_create=NS first_run=NS init=NS
 * main: bulkhead-vmm's main() began; vm_create: KVM_CREATE_VM; first_run: vCPU 0's first
 * KVM_RUN; init: the magic write. Readers must ignore unknown trailing key=value pairs. */
#define BOOT_TIMER_LINE_PREFIX "bulkhead-vmm: boot-timer "

#endif
