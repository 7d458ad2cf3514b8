/* SPDX-License-Identifier: Apache-2.0 */
/* session/engine_kvm.c: the kvm engine — our kernel and initramfs under bulkhead-vmm, with the
 * serial console on a pipe to us and the VMM's stderr on the diag pipe. */
#include "session/paths.h"
#include "session/engine_spawn.h"
#include "jail/jail.h"
#include "jail/jail_san.h"
#include "lib/unix_listen.h"
#include "session/engine.h"
#include "session/share_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int kvm_start(const struct launch *l, const struct engine_choice *c, struct vm_proc *vm,
		     char *err, size_t errlen)
{
	char vmm[PATH_MAX];
	(void)c;

	if (l->ram_file) {
		snprintf(err, errlen, "--ram-file works with the qemu engine only (--engine qemu)");
		return -1;
	}
	if (engine_vmm_path(vmm, sizeof(vmm)) || access(vmm, X_OK) < 0) {
		snprintf(err, errlen, "bulkhead-vmm not found next to bulkhead (%s): run 'make'",
			 vmm);
		return -1;
	}
	/* Jailed, it gets everything as descriptors opened here, and an empty root: kernel,
	 * initramfs, /dev/kvm, then the back ends' sockets, as 3, 4, 5, ... */
	int fds[3 + LAUNCH_FS_MAX + 1];
	size_t nfds = 0;
	const char *files[] = { l->kernel, l->initrd, "/dev/kvm" };
	const char *socks[LAUNCH_FS_MAX + 1];
	for (size_t i = 0; i < LAUNCH_FS_MAX; i++)
		socks[i] = l->fs[i].sock;
	socks[LAUNCH_FS_MAX] = l->vsock_sock;
	char fdarg[3 + LAUNCH_FS_MAX + 1][16];
	int rc = 0;
	for (size_t i = 0; l->jail && !rc && i < 3; i++) {
		int fd = open(files[i], (i == 2 ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (fd < 0) {
			rc = -1;
			snprintf(err, errlen, "%s: %s", files[i], strerror(errno));
		} else {
			fds[nfds++] = fd;
		}
	}
	for (size_t i = 0; l->jail && !rc && i < LAUNCH_FS_MAX + 1; i++) {
		int fd = socks[i] ? unix_connect(socks[i], false) : 0;
		if (fd < 0) {
			rc = -1;
			snprintf(err, errlen, "connect to %s: %s", socks[i], strerror(-fd));
		} else if (socks[i]) {
			fds[nfds++] = fd;
		}
	}
	if (rc) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return -1;
	}
	for (size_t i = 0; i < nfds; i++)
		snprintf(fdarg[i], sizeof(fdarg[i]), "%u", (unsigned)(3 + i));
	static struct engine_argv a; /* large: not on the stack */
	memset(&a, 0, sizeof(a));
	engine_arg(&a, vmm);
	engine_arg(&a, l->jail ? "--kernel-fd" : "--kernel");
	engine_arg(&a, l->jail ? fdarg[0] : l->kernel);
	engine_arg(&a, l->jail ? "--initrd-fd" : "--initrd");
	engine_arg(&a, l->jail ? fdarg[1] : l->initrd);
	if (l->jail) {
		engine_arg(&a, "--kvm-fd");
		engine_arg(&a, fdarg[2]);
	}
	engine_arg(&a, "--cmdline");
	engine_arg(&a, l->cmdline);
	engine_arg(&a, "--mem");
	engine_argf(&a, "%u", l->mem_mib);
	engine_arg(&a, "--cpus");
	engine_argf(&a, "%u", l->cpus);
	/* bulkhead-vmm adds the virtio_mmio.device= entries to the command line. */
	size_t next = 3;
	for (size_t i = 0; i < LAUNCH_FS_MAX; i++) {
		if (!l->fs[i].sock)
			continue;
		engine_arg(&a, "--virtio-fs");
		if (l->jail)
			engine_argf(&a, "fd=%s,tag=%s", fdarg[next++], l->fs[i].tag);
		else
			engine_argf(&a, "%s,tag=%s", l->fs[i].sock, l->fs[i].tag);
	}
	if (l->vsock_sock) {
		engine_arg(&a, "--virtio-vsock");
		if (l->jail)
			engine_argf(&a, "fd=%s,cid=%u", fdarg[next++], l->guest_cid);
		else
			engine_argf(&a, "%s,cid=%u", l->vsock_sock, l->guest_cid);
	}
	if (!l->jail)
		engine_arg(&a, "--no-seccomp"); /* --no-jail is for debugging: all of it off */
	struct jail_spec spec = {
		.ids = l->jail,
		.empty_root = true,
		.extra_gid = (gid_t)-1,
		.file_writes = true, /* it sizes the memfd that holds guest RAM */
		.fds = fds,
		.nfds = nfds,
	};
	struct jail_san san; /* a sanitizer build's loader and libraries; else nothing */
	(void)jail_san_extend(&san, &spec); /* no mounts of its own: cannot fail */
	rc = engine_spawn(&a, "bulkhead-vmm", l->diag_w, l->verbose, l->jail ? &spec : NULL, vm,
			  err, errlen);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	return rc;
}

/* reboot=k: bulkhead-vmm's i8042 reset is the guest's clean exit. */
const struct engine_ops engine_kvm_ops = { .name = "kvm", .reboot = "k", .start = kvm_start };
