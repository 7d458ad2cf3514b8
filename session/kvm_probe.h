/* SPDX-License-Identifier: Apache-2.0 */
/* session/kvm_probe.h: what this host's KVM can run, found by running tiny probe guests
 * (x86-64), or by asking KVM for the vGIC and PSCI (arm64). */
#ifndef BULKHEAD_SESSION_KVM_PROBE_H
#define BULKHEAD_SESSION_KVM_PROBE_H

#include <stdbool.h>
#include <stddef.h>

enum probe_result {
	PROBE_UNKNOWN = 0, /* not run, or could not run (see why) */
	PROBE_YES,
	PROBE_NO,
};

struct kvm_caps {
	bool usable;			 /* /dev/kvm opens, API 12, a VM can be created */
	char module[32];		 /* e.g. "kvm_intel", "kvm_amd", "kvm_pvm" */
	enum probe_result kernel_native; /* guest ring 0 runs natively, not emulated */
	double kernel_mips;		 /* ring-0 loop speed, million instructions/s */
	enum probe_result ring3_syscall; /* a ring-3 `syscall` lands in ring 0 */
	/* arm64 (the two probes above are x86-64 guests, not run there): */
	char gic[4];   /* the in-kernel vGIC a VM gets: "v3", "v2", or "" (none) */
	bool psci_0_2; /* KVM gives the guest PSCI 0.2 (vCPU boot, power-off) */
	char why[256];			 /* one line: why a probe failed or was not run */
};

/* A program run to its end (or to its time limit, then killed), its output kept. */
struct probe_run {
	int status; /* exit status, or -1 when killed by a signal (see sig) */
	int sig;
	char out[2048];
	char err[8192];
	size_t outlen, errlen;
};
/* Runs argv[0] with argv for at most limit_ms (then kills it), capturing stdout and stderr
 * into r. 0 when it ran (its status in r), or -errno. */
int probe_exec(char *const argv[], unsigned limit_ms, struct probe_run *r);

/* Probes KVM with the probe guests, afresh (`bulkhead doctor`, `bench`). with_timing=false
 * skips the (slower on emulating hosts) kernel-mode timing loop. Whole verdicts are kept for
 * kvm_probe_cached. */
void kvm_probe(bool with_timing, struct kvm_caps *out);
/* The same with timing, for a session's engine choice: /dev/kvm is checked each time, the
 * probe guests' verdicts come from the cache while this boot, /dev/kvm, bulkhead-vmm and the
 * probe guests are the ones they were found with (session/kvm_probe_cache.c). */
void kvm_probe_cached(struct kvm_caps *out);
/* The cache itself: get fills ring3_syscall, kernel_native and kernel_mips (true on a hit);
 * put keeps caps' verdicts when both probes gave one. */
bool kvm_probe_cache_get(struct kvm_caps *caps);
void kvm_probe_cache_put(const struct kvm_caps *caps);

/* True when KVM can run a whole Linux guest, user space included. */
bool kvm_runs_linux(const struct kvm_caps *caps);
/* Why not, in a few words, when kvm_runs_linux is false for a usable KVM. */
const char *kvm_why_not_linux(const struct kvm_caps *caps);

#endif
