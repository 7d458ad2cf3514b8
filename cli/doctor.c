/* SPDX-License-Identifier: Apache-2.0 */
/* cli/doctor.c: `bulkhead doctor` — what this host can run (cli/kvm_probe.c), QEMU,
 * virtiofsd and the guest kernel, whether the jail works, and which engine `auto` picks. */
#include "cli/doctor.h"

#include "cli/engine.h"
#include "cli/kvm_probe.h"
#include "cli/paths.h"
#include "lib/vmm_exit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- `bulkhead doctor` ---------------------------------------------------------------- */

static const char doctor_usage[] =
	"usage: bulkhead doctor\n"
	"\n"
	"Prints what this host can run, one fact a line: whether /dev/kvm is usable; whether\n"
	"guest kernel mode runs natively or is emulated (a timed loop in a probe guest); whether\n"
	"a guest's ring-3 syscall works (a probe guest that drops to ring 3 and makes one);\n"
	"QEMU, virtiofsd and the guest kernel; whether the jail works (a jailed process started\n"
	"as a session's back end is) and whether sessions get cgroup limits; and which engine\n"
	"'run --engine auto' picks, and why.\n"
	"\n"
	"Exit status: 0 when some engine can run sessions here and the jail works, 125 else.\n";

static void print_mips(double mips)
{
	if (mips < 10)
		printf("~%.1f million instructions/s", mips);
	else
		printf("~%.0f million instructions/s", mips);
}

static void doctor_print_kvm(const struct kvm_caps *c)
{
	if (c->usable)
		printf("kvm: usable (API %d, module %s)\n", KVM_API_VERSION,
		       c->module[0] ? c->module : "unknown");
	else
		printf("kvm: not usable (%s)\n", c->why[0] ? c->why : "unknown reason");

	printf("guest kernel mode: ");
	if (!c->usable)
		printf("not probed (no usable KVM)\n");
	else if (c->kernel_native == PROBE_YES ||
		 (c->kernel_native == PROBE_NO && c->kernel_mips > 0)) {
		printf("%s (", c->kernel_native == PROBE_YES ? "native" : "emulated");
		print_mips(c->kernel_mips);
		printf(")\n");
	} else if (c->kernel_native == PROBE_NO)
		printf("emulated (%s)\n", c->why);
	else
		printf("unknown (%s)\n", c->why[0] ? c->why : "probe not run");

	printf("guest ring-3 syscall: ");
	if (!c->usable)
		printf("not probed (no usable KVM)\n");
	else if (c->ring3_syscall == PROBE_YES)
		printf("works\n");
	else if (c->ring3_syscall == PROBE_NO)
		printf("broken (handler ran in ring 3)\n");
	else
		printf("unknown (%s)\n", c->why[0] ? c->why : "probe not run");
}

static void doctor_print_qemu(void)
{
	const char *qemu = engine_qemu_path();
	if (!qemu) {
		printf("qemu: not found (run 'make deps': package qemu-system-x86)\n");
		return;
	}
	struct probe_run r;
	char version[64] = "";
	char *const argv[] = { (char *)(uintptr_t)qemu, "-version", NULL };
	if (probe_exec(argv, 5000, &r) == 0 && r.status == 0) {
		const char *v = strstr(r.out, "version ");
		if (v)
			sscanf(v + 8, "%63[^ \n(]", version);
	}
	if (version[0])
		printf("qemu: %s (QEMU %s)\n", qemu, version);
	else
		printf("qemu: %s (version unknown: '%s -version' failed)\n", qemu, qemu);
}

static void doctor_print_files(void)
{
	static const char *const virtiofsd[] = { "/usr/lib/qemu/virtiofsd",
						 "/usr/libexec/virtiofsd" };
	const char *libdir = paths_libdir();
	char vmlinux[PATH_MAX], bzimage[PATH_MAX], initrd[PATH_MAX];
	const char *found = NULL;

	for (size_t i = 0; i < sizeof(virtiofsd) / sizeof(virtiofsd[0]) && !found; i++)
		if (access(virtiofsd[i], X_OK) == 0)
			found = virtiofsd[i];
	if (found)
		printf("virtiofsd: %s\n", found);
	else
		printf("virtiofsd: not found (run 'make deps': package qemu-system-common)\n");

	if (paths_join(vmlinux, sizeof(vmlinux), libdir, "vmlinux") ||
	    paths_join(bzimage, sizeof(bzimage), libdir, "bzImage") ||
	    paths_join(initrd, sizeof(initrd), libdir, "initramfs.cpio")) {
		printf("guest kernel: unknown (install path too long)\n");
		return;
	}
	bool has_vmlinux = access(vmlinux, R_OK) == 0, has_bz = access(bzimage, R_OK) == 0;
	char shown[PATH_MAX];
	if (has_vmlinux)
		printf("guest kernel: %s, bzImage %s\n", realpath(vmlinux, shown) ? shown : vmlinux,
		       has_bz ? "present" : "missing");
	else if (has_bz)
		printf("guest kernel: %s (vmlinux missing)\n",
		       realpath(bzimage, shown) ? shown : bzimage);
	else
		printf("guest kernel: missing (no vmlinux or bzImage in %s; run make)\n", libdir);
	if (access(initrd, R_OK) == 0)
		printf("guest initramfs: %s\n", realpath(initrd, shown) ? shown : initrd);
	else
		printf("guest initramfs: missing (%s; run make)\n", initrd);
}

int cmd_doctor(int argc, char **argv)
{
	struct kvm_caps caps;
	struct engine_choice choice;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(doctor_usage, stdout);
			return 0;
		}
		fprintf(stderr,
			"bulkhead doctor: unknown argument '%s' (see 'bulkhead doctor --help')\n",
			argv[i]);
		return 125;
	}

	kvm_probe(true, &caps);
	doctor_print_kvm(&caps);
	doctor_print_qemu();
	doctor_print_files();
	int jail = doctor_print_jail();
	fflush(stdout);

	int rc = engine_choose(ENGINE_AUTO, &choice);
	if (rc == 0) {
		printf("engine auto: %s (%s)\n", engine_name(choice.kind), choice.why);
		if (jail < 0) {
			fflush(stdout);
			fprintf(stderr, "bulkhead doctor: the jail cannot run on this host\n");
			return 125;
		}
		return 0;
	}
	printf("engine auto: none (%s)\n", choice.why);
	fflush(stdout);
	fprintf(stderr, "bulkhead doctor: no engine can run sessions on this host: %s\n",
		choice.why);
	return 125;
}
