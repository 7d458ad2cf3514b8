/* cli/engine_kvm.c: the kvm engine — our kernel and initramfs under bulkhead-vmm, with the
 * serial console on a pipe to us and the VMM's stderr on the diag pipe. */
#include "cli/paths.h"
#include "cli/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define KVM_MAX_ARGS 24

static void child_exec(const char *vmm, char *const args[], int out, int diag)
{
	/* Its own process group: a terminal's Ctrl-C reaches us, and we decide. */
	setpgid(0, 0);
	/* If bulkhead dies, the VM dies with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(diag, 2) < 0)
		_exit(126);
	close_range(3, ~0U, 0);
	execv(vmm, args);
	dprintf(2, "exec %s: %s\n", vmm, strerror(errno));
	_exit(127);
}

int kvm_vmm_path(char *buf, size_t len)
{
	return paths_join(buf, len, paths_bindir(), "bulkhead-vmm");
}

int kvm_start(const struct launch *l, const struct engine_choice *c, struct guest *g, char *err,
	      size_t errlen)
{
	char vmm[PATH_MAX], mem[32], cpus[32];
	(void)c;

	if (kvm_vmm_path(vmm, sizeof(vmm)) || access(vmm, X_OK) < 0) {
		snprintf(err, errlen, "bulkhead-vmm not found next to bulkhead (%s): run 'make'",
			 vmm);
		return -1;
	}
	if (l->fs_sock || l->vsock_sock) {
		/* The virtio-mmio transport (vmm/virtio/) is not wired to the CLI yet. */
		snprintf(err, errlen, "the kvm engine cannot attach %s yet; use --engine qemu",
			 l->fs_sock ? "a --work share" : "the vsock agent channel (-i/-t)");
		return -1;
	}
	snprintf(mem, sizeof(mem), "%u", l->mem_mib);
	snprintf(cpus, sizeof(cpus), "%u", l->cpus);
	const char *args[KVM_MAX_ARGS] = {
		vmm,	    "--kernel", l->kernel, "--initrd", l->initrd, "--cmdline",
		l->cmdline, "--mem",	mem,	   "--cpus",   cpus,	  NULL,
	};
	if (l->verbose) {
		fputs("bulkhead: engine command:", stderr);
		for (size_t i = 0; args[i]; i++)
			fprintf(stderr, " '%s'", args[i]);
		fputc('\n', stderr);
	}

	int con[2];
	if (pipe2(con, O_CLOEXEC) < 0)
		goto fail_errno;
	pid_t pid = fork();
	if (pid == 0)
		child_exec(vmm, (char *const *)args, con[1], l->diag_w);
	close(con[1]);
	if (pid < 0) {
		close(con[0]);
		goto fail_errno;
	}
	g->pid = pid;
	g->console_fd = con[0];
	g->engine_label = "bulkhead-vmm";
	return 0;
fail_errno:
	snprintf(err, errlen, "cannot start bulkhead-vmm: %s", strerror(errno));
	return -1;
}
