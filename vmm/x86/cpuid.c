/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/cpuid.c: the CPUID a vCPU reports — what KVM supports, normalised: this vCPU's
 * APIC ID, a topology of vm->ncpus single-thread cores in one package, the hypervisor bit,
 * and no leaves a guest must not rely on (PMU, power management). Without a CPUID table KVM
 * treats the guest as a CPU with no features (no long mode). */
#include "vmm/log.h"
#include "vmm/vcpu.h"
#include "vmm/x86/arch.h"
#include "vmm/x86/cpuid.h"
#include "vmm/x86/snapshot_arch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#define CPUID_MAX_ENTRIES_LIMIT 1024 /* far above any real CPU's leaf count */
#define CPUID_1_ECX_HYPERVISOR	(1u << 31)
#define CPUID_1_EDX_HTT		(1u << 28)
#define CPUID_TOPO_SMT		1 /* leaf 0xb/0x1f level types */
#define CPUID_TOPO_CORE		2

static unsigned ceil_log2(unsigned n)
{
	unsigned s = 0;
	while ((1u << s) < n)
		s++;
	return s;
}

/* Leaves 0xb and 0x1f: level 0 = one thread per core, level 1 = ncpus cores per package. */
static void cpuid_topology(struct kvm_cpuid_entry2 *e, unsigned id, unsigned ncpus)
{
	e->edx = id; /* x2APIC ID */
	switch (e->index) {
	case 0:
		e->eax = 0;
		e->ebx = 1;
		e->ecx = (CPUID_TOPO_SMT << 8) | 0;
		break;
	case 1:
		e->eax = ceil_log2(ncpus);
		e->ebx = ncpus;
		e->ecx = (CPUID_TOPO_CORE << 8) | 1;
		break;
	default:
		e->eax = e->ebx = 0;
		e->ecx = e->index; /* level type 0: invalid, ends the enumeration */
		break;
	}
}

static struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == idx)
			return &c->entries[i];
	return NULL;
}

void x86_cpuid_normalise(struct kvm_cpuid2 *c, unsigned cap, unsigned id, unsigned ncpus)
{
	/* Linux reads the core count from 0xb sub-leaf 1: make sure it exists. */
	static const uint32_t topo[] = { 0xb, 0x1f };
	for (unsigned t = 0; t < 2; t++) {
		struct kvm_cpuid_entry2 *e0 = cpuid_find(c, topo[t], 0);
		for (uint32_t sub = 1; e0 && sub <= 2; sub++) {
			if (cpuid_find(c, topo[t], sub) || c->nent >= cap)
				continue;
			struct kvm_cpuid_entry2 *e = &c->entries[c->nent++];
			*e = (struct kvm_cpuid_entry2){ .function = topo[t],
							.index = sub,
							.flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX };
		}
	}
	for (unsigned i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];
		switch (e->function) {
		case 1:
			/* Initial APIC ID in EBX[31:24], logical CPUs per package in [23:16]. */
			e->ebx = (e->ebx & 0x0000ffffu) | (id << 24) | ((ncpus & 0xff) << 16);
			if (ncpus > 1)
				e->edx |= CPUID_1_EDX_HTT;
			else
				e->edx &= ~CPUID_1_EDX_HTT;
			e->ecx |= CPUID_1_ECX_HYPERVISOR;
			break;
		case 4:
			/* Cores per package - 1 in EAX[31:26]; each cache private to a core. */
			if (e->eax & 0x1f)
				e->eax = (e->eax & 0x00003fffu) | (((ncpus - 1) & 0x3f) << 26);
			break;
		case 6:	  /* thermal and power management: the host's, not ours */
		case 0xa: /* architectural PMU: no counters are virtualised for the guest */
			e->eax = e->ebx = e->ecx = e->edx = 0;
			break;
		case 0xb:
		case 0x1f:
			cpuid_topology(e, id, ncpus);
			break;
		case 0x80000008:
			/* AMD: cores per package - 1 in ECX[7:0]. */
			e->ecx = (e->ecx & ~0xffu) | ((ncpus - 1) & 0xff);
			break;
		}
	}
}

#define CPUID_SPARE 8 /* room for the sub-leaves x86_cpuid_normalise() may add */

static struct kvm_cpuid2 *cpuid_supported(int kvm_fd, int *err)
{
	for (unsigned n = 64; n <= CPUID_MAX_ENTRIES_LIMIT; n *= 2) {
		struct kvm_cpuid2 *c =
			calloc(1, sizeof(*c) + (n + CPUID_SPARE) * sizeof(c->entries[0]));
		if (!c) {
			*err = ENOMEM;
			return NULL;
		}
		c->nent = n;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			*err = 0;
			return c;
		}
		*err = errno;
		free(c);
		if (*err != E2BIG)
			return NULL;
	}
	return NULL;
}

int vcpu_arch_cpuid(struct vcpu *vcpu)
{
	return vcpu_arch_cpuid_restore(vcpu, NULL);
}

int vcpu_arch_cpuid_restore(struct vcpu *vcpu, const struct kvm_cpuid2 *saved)
{
	int err = 0;
	struct kvm_cpuid2 *c = cpuid_supported(vcpu->vm->kvm_fd, &err);
	char lack[96];

	if (!c) {
		vmm_log_setup("KVM_GET_SUPPORTED_CPUID failed", err,
			      "this host's KVM is not supported");
		return -err;
	}
	x86_cpuid_normalise(c, c->nent + CPUID_SPARE, vcpu->id,
			    vcpu->vm->ncpus ? vcpu->vm->ncpus : 1);
	if (saved && x86_cpuid_missing(saved, c, lack, sizeof(lack))) {
		char what[160];
		snprintf(what, sizeof(what), "the snapshot's CPU has features this host lacks (%s)",
			 lack);
		vmm_log_setup(what, 0, "restore it on a host with the same CPU features");
		free(c);
		return -ENOTSUP;
	}
	if (ioctl(vcpu->fd, KVM_SET_CPUID2, saved ? saved : c) < 0) {
		err = errno;
		vmm_log_setup("KVM_SET_CPUID2 failed", err, "this host's KVM is not supported");
	}
	free(c);
	return -err;
}
