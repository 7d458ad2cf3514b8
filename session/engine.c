/* SPDX-License-Identifier: Apache-2.0 */
/* session/engine.c: pick the engine for a session from what this host's KVM can do, and the
 * kernel command line every guest starts with. */
#include "session/engine.h"
#include "session/kvm_probe.h"
#include "session/paths.h"
#include "lib/boot_args.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const names[] = {
	[ENGINE_AUTO] = "auto",
	[ENGINE_KVM] = "kvm",
	[ENGINE_QEMU] = "qemu",
};

int engine_parse(const char *name, enum engine_kind *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i]) == 0) {
			*out = (enum engine_kind)i;
			return 0;
		}
	}
	return -1;
}

const char *engine_name(enum engine_kind kind)
{
	return names[kind];
}

const char *engine_qemu_path(void)
{
	const char *env = getenv("BULKHEAD_QEMU");
	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	static const char *const candidates[] = { "/usr/bin/qemu-system-x86_64",
						  "/usr/local/bin/qemu-system-x86_64" };
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

/* kvm: bulkhead-vmm present, and KVM runs Linux (or the caller insists). */
static int engine_choose_kvm(const struct kvm_caps *caps, bool force, struct engine_choice *out)
{
	out->kind = ENGINE_KVM;
	out->ops = &engine_kvm_ops;
	out->kvm_emulated = caps->kernel_native == PROBE_NO;
	if (!caps->usable) {
		snprintf(out->why, sizeof(out->why), "KVM not usable (%.150s); use --engine qemu",
			 caps->why[0] ? caps->why : "unknown");
		return -1;
	}
	if (!kvm_runs_linux(caps) && !force) {
		snprintf(out->why, sizeof(out->why),
			 "this host's KVM cannot run a Linux guest's user space (%s; see 'bulkhead "
			 "doctor'); use --engine qemu",
			 kvm_why_not_linux(caps));
		return -1;
	}
	snprintf(out->why, sizeof(out->why), "kvm (bulkhead-vmm)%s",
		 kvm_runs_linux(caps) ? ""
				      : " forced by " ENGINE_KVM_FORCE_ENV
					" on a host whose KVM cannot run guest user space");
	return 0;
}

int engine_choose(enum engine_kind requested, struct engine_choice *out)
{
	memset(out, 0, sizeof(*out));
	if (requested == ENGINE_KVM) {
		const char *f = getenv(ENGINE_KVM_FORCE_ENV);
		bool force = f && strcmp(f, "1") == 0;
		struct kvm_caps caps;
		/* The timing probe tells whether the emulation quirks are needed. */
		kvm_probe_cached(&caps);
		return engine_choose_kvm(&caps, force, out);
	}

	struct kvm_caps caps;
	kvm_probe_cached(&caps);
	if (requested == ENGINE_AUTO && kvm_runs_linux(&caps) &&
	    engine_choose_kvm(&caps, false, out) == 0)
		return 0;
	memset(out, 0, sizeof(*out));
	/* QEMU; the probe only decides its accelerator. */
	out->kind = ENGINE_QEMU;
	out->ops = &engine_qemu_ops;
#if defined(__aarch64__)
	snprintf(out->why, sizeof(out->why),
		 "the QEMU engine runs x86-64 guests only; on arm64 sessions need --engine kvm "
		 "(%.150s)",
		 caps.usable ? kvm_why_not_linux(&caps) : caps.why);
	return -1;
#endif
	if (!engine_qemu_path()) {
		snprintf(out->why, sizeof(out->why),
			 "qemu-system-x86_64 not found: run 'make deps' (package qemu-system-x86)");
		return -1;
	}
	out->qemu_accel_kvm = kvm_runs_linux(&caps);
	if (out->qemu_accel_kvm)
		snprintf(out->why, sizeof(out->why), "qemu with KVM");
	else if (!caps.usable)
		snprintf(out->why, sizeof(out->why), "qemu with TCG (KVM not usable: %.180s)",
			 caps.why[0] ? caps.why : "unknown");
	else
		snprintf(out->why, sizeof(out->why),
			 "qemu with TCG (this host's KVM cannot run guest user space: %.150s)",
			 caps.ring3_syscall == PROBE_NO
				 ? "ring-3 syscalls are broken"
				 : (caps.why[0] ? caps.why : "probe failed"));
	return 0;
}

int engine_vmm_path(char *buf, size_t len)
{
	return paths_join(buf, len, paths_bindir(), "bulkhead-vmm");
}

int engine_cmdline(const struct engine_choice *c, bool quiet, const char *work_mode, bool broker,
		   char *buf, size_t len)
{
	/* panic=-1 and the engine's reboot method make every end of the guest the engine's
	 * exit. Hosts that emulate guest kernel mode need the quirks of docs/HOSTS.md (QEMU's
	 * TCG has no such gaps). random.trust_cpu=on: RDRAND (the CPU's under KVM, the host's
	 * getrandom under TCG) seeds the kernel's generator at boot; without it a guest's first
	 * getrandom(), e.g. Python's start, waits a second or more for jitter entropy. */
	int n = snprintf(buf, len,
			 "console=ttyS0 8250.nr_uarts=1 panic=-1 reboot=%s rdinit=/init "
			 "tsc=reliable no_timer_check random.trust_cpu=on%s%s%s%s%s",
			 c->ops->reboot,
			 c->kind == ENGINE_KVM && c->kvm_emulated
				 ? " noxsave clearcpuid=smap,smep,pku,umip,popcnt"
				 : "",
			 quiet ? " quiet" : "", work_mode ? " " BOOT_ARGS_WORK : "",
			 work_mode ? work_mode : "", broker ? " " BOOT_ARGS_BROKER "1" : "");
	return n < 0 || (size_t)n >= len ? -1 : 0;
}
