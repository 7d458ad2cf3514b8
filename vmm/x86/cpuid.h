/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/cpuid.h: CPUID normalisation, separate from the ioctls so it can be unit-tested. */
#ifndef BULKHEAD_VMM_X86_CPUID_H
#define BULKHEAD_VMM_X86_CPUID_H

#include <linux/kvm.h>

/* Rewrites a KVM_GET_SUPPORTED_CPUID table for vCPU `id` of `ncpus`. Topology sub-leaves
 * the host left out (e.g. 0xb.1 on AMD) are appended while c->nent < cap. */
void x86_cpuid_normalise(struct kvm_cpuid2 *c, unsigned cap, unsigned id, unsigned ncpus);

#endif
