/* cli/engine_kvm.c: the kvm engine — our kernel and initramfs under bulkhead-vmm, with the
 * serial console on a pipe to us and the VMM's stderr on the diag pipe. */
#include "cli/paths.h"
#include "cli/engine_spawn.h"
#include "cli/run.h"
#include "cli/share_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int kvm_vmm_path(char *buf, size_t len)
{
	return paths_join(buf, len, paths_bindir(), "bulkhead-vmm");
}

int kvm_start(const struct launch *l, const struct engine_choice *c, struct guest *g, char *err,
	      size_t errlen)
{
	char vmm[PATH_MAX];
	(void)c;

	if (l->ram_file) {
		snprintf(err, errlen, "--ram-file works with the qemu engine only (--engine qemu)");
		return -1;
	}
	if (kvm_vmm_path(vmm, sizeof(vmm)) || access(vmm, X_OK) < 0) {
		snprintf(err, errlen, "bulkhead-vmm not found next to bulkhead (%s): run 'make'",
			 vmm);
		return -1;
	}
	static struct engine_argv a; /* large: not on the stack */
	memset(&a, 0, sizeof(a));
	engine_arg(&a, vmm);
	engine_arg(&a, "--kernel");
	engine_arg(&a, l->kernel);
	engine_arg(&a, "--initrd");
	engine_arg(&a, l->initrd);
	engine_arg(&a, "--cmdline");
	engine_arg(&a, l->cmdline);
	engine_arg(&a, "--mem");
	engine_argf(&a, "%u", l->mem_mib);
	engine_arg(&a, "--cpus");
	engine_argf(&a, "%u", l->cpus);
	/* bulkhead-vmm adds the virtio_mmio.device= entries to the command line. */
	if (l->fs_sock) {
		engine_arg(&a, "--virtio-fs");
		engine_argf(&a, "%s,tag=%s", l->fs_sock, SHARE_FS_TAG);
	}
	if (l->vsock_sock) {
		engine_arg(&a, "--virtio-vsock");
		engine_argf(&a, "%s,cid=%u", l->vsock_sock, l->guest_cid);
	}
	return engine_spawn(&a, "bulkhead-vmm", l->diag_w, l->verbose, !l->no_jail, true, g, err,
			    errlen);
}
