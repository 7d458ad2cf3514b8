/* cli/engine_qemu.c: the QEMU engine — our kernel and initramfs under
 * qemu-system-x86_64 -M microvm, with the serial console on a pipe to us. */
#include "cli/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define QEMU_MAX_ARGS 48

static void child_exec(const char *qemu, char *const args[], int out, int diag)
{
	/* Its own process group: a terminal's Ctrl-C reaches us, and we decide. */
	setpgid(0, 0);
	/* If bulkhead dies, the VM dies with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(diag, 2) < 0)
		_exit(126);
	close_range(3, ~0U, 0);
	execv(qemu, args);
	dprintf(2, "exec %s: %s\n", qemu, strerror(errno));
	_exit(127);
}

/* -v: the exact command, shell-quoted, so it can be re-run by hand (bench/ does). */
static void print_command(const char *const args[])
{
	fputs("bulkhead: engine command:", stderr);
	for (size_t i = 0; args[i]; i++) {
		fputs(" '", stderr);
		for (const char *c = args[i]; *c; c++)
			if (*c == '\'')
				fputs("'\\''", stderr);
			else
				fputc(*c, stderr);
		fputc('\'', stderr);
	}
	fputc('\n', stderr);
}

int qemu_start(const struct run_opts *o, const struct engine_choice *c, const char *cmdline,
	       struct guest *g, char *err, size_t errlen)
{
	const char *qemu = engine_qemu_path();
	if (!qemu) {
		snprintf(err, errlen, "qemu-system-x86_64 not found: run 'make deps'");
		return -1;
	}
	char mem[32], smp[32];
	snprintf(mem, sizeof(mem), "%u", o->mem_mib);
	snprintf(smp, sizeof(smp), "%u", o->cpus);

	/* microvm without ACPI, option ROMs or RTC: the smallest machine QEMU has.
	 * Modern virtio-mmio only (virtiofsd refuses legacy devices). */
	const char *args[QEMU_MAX_ARGS] = {
		qemu,
		"-M",
		"microvm,acpi=off,x-option-roms=off,rtc=on,isa-serial=on,pit=on,pic=on",
		"-global",
		"virtio-mmio.force-legacy=false",
		"-accel",
		c->qemu_accel_kvm ? "kvm" : "tcg",
		"-cpu",
		c->qemu_accel_kvm ? "host" : "max",
		"-m",
		mem,
		"-smp",
		smp,
		"-nodefaults",
		"-no-user-config",
		"-no-reboot",
		"-display",
		"none",
		"-monitor",
		"none",
		"-serial",
		"stdio",
		"-kernel",
		o->kernel,
		"-initrd",
		o->initrd,
		"-append",
		cmdline,
		NULL,
	};

	if (o->verbose)
		print_command(args);

	int con[2], diag[2];
	if (pipe2(con, O_CLOEXEC) < 0)
		goto fail_errno;
	if (pipe2(diag, O_CLOEXEC) < 0) {
		close(con[0]);
		close(con[1]);
		goto fail_errno;
	}
	pid_t pid = fork();
	if (pid == 0)
		child_exec(qemu, (char *const *)args, con[1], diag[1]);
	close(con[1]);
	close(diag[1]);
	if (pid < 0) {
		close(con[0]);
		close(diag[0]);
		goto fail_errno;
	}
	g->pid = pid;
	g->console_fd = con[0];
	g->diag_fd = diag[0];
	g->engine_label = "qemu";
	return 0;
fail_errno:
	snprintf(err, errlen, "cannot start qemu: %s", strerror(errno));
	return -1;
}
