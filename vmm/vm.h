/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/vm.h: one virtual machine — the KVM handles, guest RAM, the I/O buses and the
 * "stop with this status" request that devices raise. Everything a VM needs lives here, so
 * two VMs in one process share nothing mutable. */
#ifndef BULKHEAD_VMM_VM_H
#define BULKHEAD_VMM_VM_H

#include "vmm/bus.h"
#include "vmm/gmem.h"
#include "vmm/stop.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VM_MAX_VCPUS 32

/* vm_create() flags. */
#define VM_IRQCHIP 0x1 /* in-kernel PIC + IOAPIC + LAPICs (KVM_CREATE_IRQCHIP) and PIT */

struct vm {
	int kvm_fd;	       /* /dev/kvm */
	int vm_fd;	       /* KVM_CREATE_VM */
	size_t vcpu_mmap_size; /* KVM_GET_VCPU_MMAP_SIZE */
	unsigned flags;	       /* VM_* given to vm_create() */
	unsigned ncpus;	       /* vCPUs this VM will have (CPUID topology, MP table) */
	struct gmem mem;
	struct bus pio;
	struct bus mmio;
	/* Buses are read by every vCPU thread and written only before they start; devices
	 * serialise their own state with this lock (one lock: exits are rare and short). */
	pthread_mutex_t dev_lock;
	uint64_t created_ns; /* CLOCK_MONOTONIC at vm_create(): origin of all timestamps */
	_Atomic uint64_t first_run_ns; /* vCPU 0's first KVM_RUN (0 before) */
	struct vm_stop stop; /* raised by a device or vCPU: every vCPU leaves its run loop */
};

/* Opens /dev/kvm, checks the API, creates the VM, does the arch set-up (flags: VM_*) and
 * gives it mem_bytes of RAM at guest-physical 0. Set-up tier: on failure prints one line
 * saying what failed and what to do, returns -errno, and leaves nothing open. */
int vm_create(struct vm *vm, uint64_t mem_bytes, unsigned ncpus, unsigned flags);
/* The same on an already open /dev/kvm (kvm_fd >= 0, owned from now on: closed by
 * vm_destroy or on failure), for a launcher that opens it before an empty root. */
int vm_create_on(struct vm *vm, int kvm_fd, uint64_t mem_bytes, unsigned ncpus, unsigned flags);
void vm_destroy(struct vm *vm);

/* A VM without KVM, for tools and tests that drive devices through the buses directly (no
 * vCPU can run): guest RAM (mem_bytes at guest-physical 0), the buses, the stop eventfd and
 * an unclaimed stop status, exactly as vm_create() leaves them; kvm_fd and vm_fd are -1.
 * Returns 0 or -errno (nothing left open); release with vm_destroy(). */
int vm_create_nokvm(struct vm *vm, uint64_t mem_bytes);

/* Ends the run: every vCPU leaves at its next exit; the first request's status wins.
 * Safe from any thread (vCPU threads call it with dev_lock held or not). */
static inline void vm_request_stop(struct vm *vm, int status)
{
	vm_stop_request(&vm->stop, status);
}

/* Raises or lowers an interrupt line (GSI) of the in-kernel irqchip. Returns 0 or -errno. */
int vm_irq_line(struct vm *vm, unsigned gsi, bool level);

/* Arch hooks (vmm/x86/vm_arch.c, vmm/arm64/vm_arch.c). What a VM needs before its first
 * vCPU exists: */
int vm_arch_init(struct vm *vm);
/* Where guest RAM starts (x86: 0; arm64: 2 GiB, above the devices): */
uint64_t vm_arch_ram_gpa(void);
/* KVM_IRQ_LINE's `irq` for a GSI (x86: the GSI; arm64: SPI `gsi`, whose INTID is 32 + gsi). */
uint32_t vm_arch_irq_line(unsigned gsi);

#endif
