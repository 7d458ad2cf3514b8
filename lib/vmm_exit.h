/* SPDX-License-Identifier: Apache-2.0 */
/* lib/vmm_exit.h: what bulkhead-vmm's exit status means; shared with the CLI (doctor, run)
 * and the tests. Keep docs in sync when a value changes: these are a public contract. */
#ifndef BULKHEAD_LIB_VMM_EXIT_H
#define BULKHEAD_LIB_VMM_EXIT_H

/* Bumped whenever a value below changes meaning (a new value does not bump it). */
#define VMM_EXIT_ABI_VERSION 1

/* Linux mode (--kernel): 0 = the guest reset itself (i8042, `reboot=k`: how a session and
 * a `panic=-1` panic end; the CLI tells them apart from the console); anything else below
 * is unexpected. Test-guest mode: 0..TG_EXIT_MAX (99) is the guest's own code, written to
 * TG_PORT_EXIT, and a reset is VMM_EXIT_RESET. */
#define VMM_EXIT_OK		0
#define VMM_EXIT_HALTED		100 /* the guest executed HLT with nothing left to wake it */
#define VMM_EXIT_SHUTDOWN	101 /* the guest shut down: triple fault (or a system event) */
#define VMM_EXIT_INTERNAL_ERROR 102 /* KVM_EXIT_INTERNAL_ERROR, e.g. an emulation failure */
#define VMM_EXIT_FAIL_ENTRY	103 /* KVM could not enter the guest (bad vCPU state) */
#define VMM_EXIT_BAD_CODE	104 /* the guest wrote an exit code above TG_EXIT_MAX */
#define VMM_EXIT_UNEXPECTED	105 /* an exit reason or KVM_RUN error we do not handle */
#define VMM_EXIT_RESET		106 /* test-guest mode: the guest reset the machine (i8042) */
#define VMM_EXIT_BACKEND	107 /* a vhost-user back end died or answered wrongly */
#define VMM_EXIT_SNAPSHOT	108 /* the VM was saved whole to --snapshot-fd and stopped */
#define VMM_EXIT_TIMEOUT	124 /* --timeout-ms expired (same value as `bulkhead run`) */
#define VMM_EXIT_SETUP		125 /* bulkhead-vmm itself failed (usage, KVM, memory, file) */

#endif
