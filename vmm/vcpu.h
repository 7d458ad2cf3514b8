/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/vcpu.h: one vCPU — its fd, its shared kvm_run page, its host thread, and the run loop
 * that turns KVM exits into bus accesses or a final exit status (lib/vmm_exit.h). */
#ifndef BULKHEAD_VMM_VCPU_H
#define BULKHEAD_VMM_VCPU_H

#include "vmm/vm.h"

#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sent to a vCPU thread to make its KVM_RUN return EINTR (the main thread's allow-list
 * permits exactly this signal). */
#define VCPU_KICK_SIGNAL SIGUSR2

struct vcpu_gate;

struct vcpu {
	struct vm *vm;
	unsigned id;
	int fd;
	struct kvm_run *run; /* mmap of the vCPU fd, vm->vcpu_mmap_size bytes */
	pthread_t thread;
	bool thread_started;
	struct vcpu_gate *gate;	 /* vcpu_run_all's start gate, while it runs */
	uint64_t first_run_ns;	 /* CLOCK_MONOTONIC just before the first KVM_RUN */
	uint64_t int3_recovered; /* emulating hosts: int3s turned into injected #BP */
	int pause_rc;		 /* what on_vcpu returned at the last pause */
	bool parked;		 /* paused now (under the gate's lock) */
	void *snap;		 /* where on_vcpu saves this vCPU's registers (vmm/snapshot_vm.c) */
};

/* Set-up tier: prints what failed and returns -errno; on failure nothing stays open. */
int vcpu_create(struct vcpu *vcpu, struct vm *vm, unsigned id);
void vcpu_destroy(struct vcpu *vcpu);

/* How vcpu_run_all locks the process down before the first guest instruction. Hooks return
 * 0 or -errno after printing one line; a failure stops the VM with VMM_EXIT_SETUP. */
struct vcpu_lockdown {
	/* On each vCPU thread, first thing (its seccomp filter). */
	int (*vcpu_thread)(struct vcpu *vcpu, void *arg);
	/* On the calling thread once every vCPU thread has run its hook and waits at the
	 * gate: no vCPU enters KVM_RUN before this returned. */
	int (*all_ready)(void *arg);
	void *arg;
};

/* Pausing the VM (a snapshot): when `fd` turns readable (a signalfd; one siginfo is read),
 * every vCPU leaves KVM_RUN, re-enters it with immediate_exit until it says EINTR so that an
 * I/O exit's instruction completes (KVM's state is consistent only then), runs on_vcpu on its own
 * thread and parks. Then on_all runs on vcpu_run_all's thread: a status >= 0 stops the VM
 * with it, -1 lets every vCPU run on. */
struct vcpu_pause {
	int fd;
	int (*on_vcpu)(struct vcpu *vcpu, void *arg);
	int (*on_all)(void *arg);
	void *arg;
};

/* Runs every vCPU on its own thread until one of them (or a device) stops the VM, or
 * timeout_ms (0: none) passes; then stops and joins them all. lk (may be NULL) locks down
 * first; pz (may be NULL) pauses on request. Returns the VM's exit status (the guest's code,
 * VMM_EXIT_*); anything but a guest's own exit gets one stderr line. */
int vcpu_run_all(struct vcpu *vcpus, unsigned n, uint64_t timeout_ms,
		 const struct vcpu_lockdown *lk, const struct vcpu_pause *pz);

/* Arch hooks the run loop calls (vmm/x86/vcpu_arch.c, vmm/arm64/vcpu_arch.c); how a vCPU
 * is set up to start is the arch's own (vmm/<arch>/arch.h). */
/* An emulation failure the VMM can step over (int3 in guest kernel mode on hosts that
 * emulate ring 0): fixes the vCPU up and returns 0; -1 when it is a real failure. */
int vcpu_arch_recover(struct vcpu *vcpu, const uint8_t *insn, unsigned insn_len);
/* Describes where the vCPU stands ("RIP 0x... (CS 0x8), bytes 0f 0b ...") for one-line
 * exit reports. `insn`/`insn_len` are bytes KVM already supplied (0 to read them). */
void vcpu_arch_where(struct vcpu *vcpu, const uint8_t *insn, unsigned insn_len, char *buf,
		     size_t len);
/* After KVM_EXIT_SHUTDOWN: true when the vCPU already holds the architectural INIT state
 * (real mode at CS 0xf000, RIP 0xfff0). AMD's KVM resets the vCPU in its SHUTDOWN intercept
 * before user space hears of it, so those registers say nothing about the fault. */
bool vcpu_arch_shutdown_was_reset(struct vcpu *vcpu);
/* Reads up to `max` instruction bytes at the vCPU's RIP (through the guest's page tables
 * and gmem_ptr). Returns how many could be read. */
unsigned vcpu_arch_insn_bytes(struct vcpu *vcpu, uint8_t *bytes, unsigned max);
/* After KVM_EXIT_SYSTEM_EVENT (a guest's power-off or reset through PSCI): the run's status,
 * with `what` set when it deserves a report (empty: a clean end, said by nobody). */
int vcpu_arch_system_event(struct vcpu *vcpu, char *what, size_t len);

#endif
