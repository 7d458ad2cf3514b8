/* cli/engine_qemu.c: the QEMU engine — our kernel and initramfs under
 * qemu-system-x86_64 -M microvm, with the serial console on a pipe to us. */
#include "cli/run.h"
#include "cli/share_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define QEMU_MAX_ARGS 64

struct argv_buf {
	const char *v[QEMU_MAX_ARGS + 1];
	unsigned n;
	char strs[8][PATH_MAX + 64]; /* storage for formatted arguments */
	unsigned nstrs;
};

static void add(struct argv_buf *a, const char *s)
{
	if (a->n < QEMU_MAX_ARGS)
		a->v[a->n++] = s;
}

__attribute__((format(printf, 2, 3))) static void addf(struct argv_buf *a, const char *fmt, ...)
{
	if (a->nstrs == sizeof(a->strs) / sizeof(a->strs[0]))
		return;
	char *s = a->strs[a->nstrs++];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s, sizeof(a->strs[0]), fmt, ap);
	va_end(ap);
	add(a, s);
}

static void child_exec(const char *qemu, char *const args[], int out, int diag)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
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

int qemu_start(const struct launch *l, const struct engine_choice *c, struct guest *g, char *err,
	       size_t errlen)
{
	const char *qemu = engine_qemu_path();
	if (!qemu) {
		snprintf(err, errlen, "qemu-system-x86_64 not found: run 'make deps'");
		return -1;
	}
	struct argv_buf a = { .n = 0 };
	add(&a, qemu);
	/* microvm without ACPI or option ROMs: the smallest machine QEMU has. Guest RAM
	 * is a shared memfd so vhost-user back ends (virtiofsd) can map it. The RTC
	 * stays: without it the kernel waits a second for a clock that never ticks. */
	add(&a, "-M");
	add(&a, "microvm,acpi=off,x-option-roms=off,rtc=on,isa-serial=on,pit=on,pic=on,"
		"memory-backend=mem");
	add(&a, "-object");
	addf(&a, "memory-backend-memfd,id=mem,size=%uM,share=on", l->mem_mib);
	add(&a, "-m");
	addf(&a, "%u", l->mem_mib);
	add(&a, "-smp");
	addf(&a, "%u", l->cpus);
	/* Modern virtio-mmio only (virtiofsd refuses legacy devices). */
	add(&a, "-global");
	add(&a, "virtio-mmio.force-legacy=false");
	add(&a, "-accel");
	add(&a, c->qemu_accel_kvm ? "kvm" : "tcg");
	add(&a, "-cpu");
	add(&a, c->qemu_accel_kvm ? "host" : "max");
	add(&a, "-nodefaults");
	add(&a, "-no-user-config");
	add(&a, "-no-reboot");
	add(&a, "-display");
	add(&a, "none");
	add(&a, "-monitor");
	add(&a, "none");
	add(&a, "-serial");
	add(&a, "stdio");
	if (l->fs_sock) {
		add(&a, "-chardev");
		addf(&a, "socket,id=fs0,path=%s", l->fs_sock);
		add(&a, "-device");
		add(&a, "vhost-user-fs-device,chardev=fs0,tag=" SHARE_FS_TAG);
	}
	if (l->vsock_sock) {
		add(&a, "-chardev");
		addf(&a, "socket,id=vs0,path=%s", l->vsock_sock);
		add(&a, "-device");
		/* QEMU asks the back end for the guest CID (GET_CONFIG). */
		add(&a, "vhost-user-vsock-device,chardev=vs0");
	}
	add(&a, "-kernel");
	add(&a, l->kernel);
	add(&a, "-initrd");
	add(&a, l->initrd);
	add(&a, "-append");
	add(&a, l->cmdline);
	if (a.n == QEMU_MAX_ARGS) {
		snprintf(err, errlen, "internal error: too many QEMU arguments");
		return -1;
	}
	a.v[a.n] = NULL;
	if (l->verbose)
		print_command(a.v);

	int con[2];
	if (pipe2(con, O_CLOEXEC) < 0)
		goto fail_errno;
	pid_t pid = fork();
	if (pid == 0)
		child_exec(qemu, (char *const *)a.v, con[1], l->diag_w);
	close(con[1]);
	if (pid < 0) {
		close(con[0]);
		goto fail_errno;
	}
	g->pid = pid;
	g->console_fd = con[0];
	g->engine_label = "qemu";
	return 0;
fail_errno:
	snprintf(err, errlen, "cannot start qemu: %s", strerror(errno));
	return -1;
}
