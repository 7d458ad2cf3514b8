/* SPDX-License-Identifier: Apache-2.0 */
/* lib/boot_timer_abi.h: the boot-timer contract between bulkhead-init (guest) and
 * bulkhead-vmm, and the line the VMM prints for `bulkhead bench boot`. */
#ifndef BULKHEAD_LIB_BOOT_TIMER_ABI_H
#define BULKHEAD_LIB_BOOT_TIMER_ABI_H

/* Bumped whenever the port, the magic value or the line below changes meaning. The three
 * sides (guest init, VMM, `bulkhead bench`) are built from one tree, so the number is for
 * readers of old measurements and other VMMs, not negotiated on the wire. */
#define BOOT_TIMER_ABI_VERSION 1

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
