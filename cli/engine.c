/* cli/engine.c: pick the engine for a session from what this host's KVM can do. */
#include "cli/engine.h"
#include "cli/doctor.h"

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

int engine_choose(enum engine_kind requested, struct engine_choice *out)
{
	memset(out, 0, sizeof(*out));
	if (requested == ENGINE_KVM) {
		out->kind = ENGINE_KVM;
		snprintf(out->why, sizeof(out->why),
			 "the kvm engine (bulkhead-vmm) cannot boot a Linux session yet; "
			 "use --engine qemu");
		return -1;
	}

	/* Both remaining paths run QEMU; the probe only decides its accelerator. */
	out->kind = ENGINE_QEMU;
	if (!engine_qemu_path()) {
		snprintf(out->why, sizeof(out->why),
			 "qemu-system-x86_64 not found: run 'make deps' (package qemu-system-x86)");
		return -1;
	}
	struct kvm_caps caps;
	doctor_probe_kvm(false, &caps);
	out->qemu_accel_kvm = doctor_kvm_runs_linux(&caps);
	if (out->qemu_accel_kvm)
		snprintf(out->why, sizeof(out->why),
			 "qemu with KVM (bulkhead-vmm does not boot Linux sessions yet)");
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
