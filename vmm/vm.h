/* vmm/vm.h: one virtual machine — the KVM handles, guest RAM, the I/O buses and the
 * "stop with this status" request that devices raise. Everything a VM needs lives here, so
 * two VMs in one process share nothing mutable. */
#ifndef BULKHEAD_VMM_VM_H
#define BULKHEAD_VMM_VM_H

#include "vmm/bus.h"
#include "vmm/gmem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm {
	int kvm_fd;	       /* /dev/kvm */
	int vm_fd;	       /* KVM_CREATE_VM */
	size_t vcpu_mmap_size; /* KVM_GET_VCPU_MMAP_SIZE */
	struct gmem mem;
	struct bus pio;
	struct bus mmio;
	uint64_t created_ns; /* CLOCK_MONOTONIC at vm_create(): origin of all timestamps */
	bool stop;	     /* set by a device: leave the run loop with stop_status */
	int stop_status;
};

/* Opens /dev/kvm, checks the API, creates the VM, does the arch set-up and gives it
 * mem_bytes of RAM at guest-physical 0. Set-up tier: on failure prints one line saying what
 * failed and what to do, returns -errno, and leaves nothing open. */
int vm_create(struct vm *vm, uint64_t mem_bytes);
void vm_destroy(struct vm *vm);

/* Ends the run at the next exit; the first request wins. */
void vm_request_stop(struct vm *vm, int status);

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t vm_now_ns(void);

/* Arch hook (vmm/x86/vm_arch.c): what a VM needs before its first vCPU exists. */
int vm_arch_init(struct vm *vm);

#endif
