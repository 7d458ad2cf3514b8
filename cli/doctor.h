/* cli/doctor.h: what this host can run, found by running tiny probe guests on KVM. */
#ifndef BULKHEAD_CLI_DOCTOR_H
#define BULKHEAD_CLI_DOCTOR_H

#include <stdbool.h>

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
	char why[256];			 /* one line: why a probe failed or was not run */
};

/* Probes KVM with the probe guests. with_timing=false skips the (slower on
 * emulating hosts) kernel-mode timing loop; `run --engine auto` uses that. */
void doctor_probe_kvm(bool with_timing, struct kvm_caps *out);

/* True when KVM can run a whole Linux guest, user space included. */
bool doctor_kvm_runs_linux(const struct kvm_caps *caps);

/* doctor_jail.c: prints the "jail:" line (a jailed process started for real) and the
 * "cgroups:" line. Returns -1 when the jail cannot run here (sessions would fail). */
int doctor_print_jail(void);

/* `bulkhead doctor`: one fact a line; exit 0 when some engine works and the jail runs. */
int cmd_doctor(int argc, char **argv);

#endif
