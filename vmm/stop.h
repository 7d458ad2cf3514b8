/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/stop.h: a VM's "stop with this status" request — what devices and vCPUs raise, what
 * the waits of vmm/stopwait.h give way to and what vmm/log.c's lines never hold up. A VM owns
 * one (struct vm's `stop`); the waits and the log take this object alone, so neither needs
 * the VM (and a fuzzer of one device links neither vm.c). */
#ifndef BULKHEAD_VMM_STOP_H
#define BULKHEAD_VMM_STOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define VM_STOP_UNCLAIMED INT32_MIN

struct vm_stop {
	int fd;			   /* eventfd: written once by vm_stop_request(); -1 before init */
	atomic_bool requested;	   /* set after status and ns: every vCPU leaves its run loop */
	atomic_int status;	   /* the first request's; VM_STOP_UNCLAIMED before */
	_Atomic uint64_t ns;	   /* CLOCK_MONOTONIC of the request (lib/mono.h) */
};

/* Unrequested, with no eventfd yet (fd -1): what a VM starts from. */
void vm_stop_clear(struct vm_stop *s);
/* Creates the eventfd. Returns 0 or -errno. */
int vm_stop_open(struct vm_stop *s);
void vm_stop_close(struct vm_stop *s);

/* The first request's status wins; later ones are dropped. Safe from any thread and from a
 * signal-free context holding any lock. */
void vm_stop_request(struct vm_stop *s, int status);

static inline bool vm_stopping(struct vm_stop *s)
{
	return atomic_load(&s->requested);
}

#endif
