/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/machine.h: one bulkhead-vmm instance — options (vmm/options.h), the VM, its vCPUs
 * and the state of every device — and the declarative device table main.c walks in order at
 * start-up and in reverse at exit. Device set-up lives in its device file; this header only
 * wires it. */
#ifndef BULKHEAD_VMM_MACHINE_H
#define BULKHEAD_VMM_MACHINE_H

#include "vmm/boot_timer.h"
#include "vmm/options.h"
#include "vmm/seccomp.h"
#include "vmm/snapshot.h"
#include "vmm/testdev.h"
#include "vmm/uart.h"
#include "vmm/vcpu.h"
#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/vm.h"
#if defined(__aarch64__)
#include "vmm/arm64/arch.h"
#else
#include "vmm/x86/arch.h"
#endif

#include <stdbool.h>
#include <stdint.h>

/* --snapshot-fd's state (vmm/snapshot_vm.c does the work). */
struct vmm_device;
struct vmm_snapshot {
	int fd;	    /* --snapshot-fd (not owned), or -1: no snapshots */
	int sig_fd; /* signalfd of SIGUSR1 */
	struct snapshot_arch arch;
	struct snap_out out;
	struct vcpu_pause pause;
	const struct vmm_device *devs; /* vmm/main.c's table: each row's save hook */
	unsigned ndevs;
};

struct machine {
	const struct vmm_opts *o;
	uint64_t main_ns;
	struct vm vm;
	unsigned nvcpus; /* created so far */
	struct vcpu vcpus[VM_MAX_VCPUS];
	/* Devices: one member each. vmm/virtio/ adds its transports here. */
	struct testdev testdev;
	struct uart uart;
	struct boot_timer boot_timer;
	struct machine_arch arch; /* the architecture's own devices (vmm/<arch>/arch.h) */
	struct virtio_devs virtio;
	struct vmm_jail jail;	  /* what the allow-lists pin (filled at lock-down) */
	struct vmm_snapshot snap; /* --snapshot-fd */
	/* --cmdline plus what devices announce (virtio_mmio.device=...). */
	char cmdline[VMM_CMDLINE_MAX];
};

/*
 * A device: init registers its ranges on m->vm's buses (set-up tier: one line on failure,
 * -errno), fini (may be NULL) flushes and releases. main.c calls every init whose `modes`
 * include the run's mode, in table order, after the VM exists and before any image is
 * loaded or vCPU created; and the fini of each device that initialised, in reverse order,
 * after the vCPUs stopped. Bus callbacks run on vCPU threads under vm.dev_lock.
 */
struct vmm_device {
	const char *name;
	unsigned modes;
	int (*init)(struct machine *m);
	void (*fini)(struct machine *m);
	/* Snapshots (vmm/snapshot_vm.h), NULL for a device with no state of its own. save
	 * adds its sections (or refuses: -errno after one line); restore sets its state from
	 * them after init, before any vCPU runs (-errno after one line). */
	int (*save)(struct machine *m, struct snap_out *out);
	int (*restore)(struct machine *m, const struct snap_in *in);
	/* After a save that failed (may be NULL): undo what save did to the running device. */
	void (*resume)(struct machine *m);
};

#endif
