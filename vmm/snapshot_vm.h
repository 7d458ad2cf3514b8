/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vmm/snapshot_vm.h: saving a running VM to --snapshot-fd and starting one from
 * --restore-fd. What a snapshot holds: guest RAM, each vCPU (CPUID, registers, FPU/XSAVE,
 * debug registers, LAPIC, MSRs, MP state, pending events), the VM (PICs, IOAPIC, PIT,
 * kvmclock) and each device's state (a section per device, from the `save`/`restore` hooks
 * of vmm/main.c's table, vmm/machine.h). The file is vmm/snapshot.h's.
 *
 * Saving: SIGUSR1 (read from a signalfd, blocked in every thread) pauses the vCPUs
 * (vcpu_run_all's struct vcpu_pause); each saves its own registers on its own thread, then
 * the main thread the rest, under the allow-lists (vmm/seccomp.c gives the roles what this
 * needs only when --snapshot-fd is given). Saved, the VMM ends with VMM_EXIT_SNAPSHOT; a
 * save that fails says why in one line, empties the file, and the guest runs on.
 */
#ifndef BULKHEAD_VMM_SNAPSHOT_VM_H
#define BULKHEAD_VMM_SNAPSHOT_VM_H

#include "vmm/snapshot.h"
#include "vmm/vcpu.h"

#include <stdint.h>

/* Section types. */
#define SNAP_SEC_VM	1  /* struct x86_vm_state */
#define SNAP_SEC_VCPU	2  /* struct x86_vcpu_state, index = vCPU id */
#define SNAP_SEC_UART	16 /* struct uart_state */
#define SNAP_SEC_I8042	17 /* struct i8042_state */
#define SNAP_SEC_VIRTIO 18 /* struct vhost_user_dev_state, index = device */

struct machine;
struct vmm_device;
struct vmm_opts;

/* Blocks SIGUSR1 in the calling thread (and the threads it makes later): first thing with
 * --snapshot-fd, so that a request before the VM runs is kept, not fatal. */
void snapshot_block_signal(void);
/* With --snapshot-fd: SIGUSR1 blocked and its signalfd, the MSR list and the buffers (all
 * before lock-down). Returns the pause to hand to vcpu_run_all (NULL without snapshots) in
 * *pz. Set-up tier. */
int snapshot_setup(struct machine *m, const struct vmm_device *devs, unsigned ndevs,
		   const struct vcpu_pause **pz);
void snapshot_fini(struct machine *m);

/* Restoring, before the VM exists: reads and checks --restore-fd whole but for its RAM,
 * takes the snapshot's mode, RAM size and vCPU count into o (refusing given --mem/--cpus
 * that differ). Set-up tier (one line). */
int snapshot_restore_open(struct vmm_opts *o, struct snap_in *in);
/* The one section of `type` (index 0), exactly `len` bytes; NULL after one line naming
 * `what` when it is missing or of another size. */
const void *snapshot_section(const struct snap_in *in, uint32_t type, uint32_t len,
			     const char *what);

/* After the devices' init: the RAM (checked), the vCPUs (created here, m->nvcpus), the VM's
 * and the devices' state. Nothing has run. Set-up tier. */
int snapshot_restore(struct machine *m, const struct vmm_device *devs, unsigned ndevs,
		     struct snap_in *in);

#endif
