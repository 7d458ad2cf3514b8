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

/* Jailed, bulkhead-vmm gets everything as descriptors opened here, numbered from 3 in the
 * order they are added, and an empty root. */
struct vmm_fds {
	int fd[4 + LAUNCH_FS_MAX + 1];
	char arg[4 + LAUNCH_FS_MAX + 1][16];
	size_t n;
};

/* Adds fd (ours now) and returns its number in the VMM as text. */
static const char *vmm_fd(struct vmm_fds *f, int fd)
{
	f->fd[f->n] = fd;
	snprintf(f->arg[f->n], sizeof(f->arg[f->n]), "%zu", 3 + f->n);
	return f->arg[f->n++];
}

static int open_fd(struct vmm_fds *f, const char *path, int flags, const char **arg, char *err,
		   size_t errlen)
{
	int fd = open(path, flags | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	*arg = vmm_fd(f, fd);
	return 0;
}

/* The template's descriptor, duplicated: the VMM's list holds only what it may close. */
static int dup_fd(struct vmm_fds *f, int fd, const char **arg, char *err, size_t errlen)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (d < 0) {
		snprintf(err, errlen, "the template: %s", strerror(errno));
		return -1;
	}
	*arg = vmm_fd(f, d);
	return 0;
}

/* The VMM's end of back end i's socket (i == LAUNCH_FS_MAX: the vsock's): a new connection,
 * or a copy of the one kept. */
static int backend_connect(const struct launch *l, size_t i, const char *sock)
{
	int *keep = i < LAUNCH_FS_MAX && l->fs_keep ? &l->fs_keep[i] : NULL;
	if (keep && *keep >= 0) {
		int fd = fcntl(*keep, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	int fd = unix_connect(sock, false);
	if (fd >= 0 && keep && (*keep = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

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
	if (!l->jail && (l->restore_fd >= 0 || l->snapshot_fd >= 0)) {
		snprintf(err, errlen, "a template needs the jail (not --no-jail)");
		return -1;
	}
	static struct engine_argv a; /* large: not on the stack */
	struct vmm_fds f = { .n = 0 };
	const char *arg = NULL;
	int rc = 0;
	memset(&a, 0, sizeof(a));
	engine_arg(&a, vmm);
	/* The guest: a template's (the snapshot decides mode, kernel and command line) or a
	 * boot of the kernel and initramfs. */
	if (l->restore_fd >= 0) {
		if (!(rc = dup_fd(&f, l->restore_fd, &arg, err, errlen))) {
			engine_arg(&a, "--restore-fd");
			engine_arg(&a, arg);
		}
	} else {
		if (!(rc = !l->jail ? 0 : open_fd(&f, l->kernel, O_RDONLY, &arg, err, errlen))) {
			engine_arg(&a, l->jail ? "--kernel-fd" : "--kernel");
			engine_arg(&a, l->jail ? arg : l->kernel);
		}
		if (!rc && !(rc = !l->jail ? 0 : open_fd(&f, l->initrd, O_RDONLY, &arg, err, errlen))) {
			engine_arg(&a, l->jail ? "--initrd-fd" : "--initrd");
			engine_arg(&a, l->jail ? arg : l->initrd);
		}
		engine_arg(&a, "--cmdline");
		engine_arg(&a, l->cmdline);
	}
	if (!rc && l->snapshot_fd >= 0 && !(rc = dup_fd(&f, l->snapshot_fd, &arg, err, errlen))) {
		engine_arg(&a, "--snapshot-fd");
		engine_arg(&a, arg);
	}
	if (!rc && l->jail && !(rc = open_fd(&f, "/dev/kvm", O_RDWR, &arg, err, errlen))) {
		engine_arg(&a, "--kvm-fd");
		engine_arg(&a, arg);
	}
	engine_arg(&a, "--mem");
	engine_argf(&a, "%u", l->mem_mib);
	engine_arg(&a, "--cpus");
	engine_argf(&a, "%u", l->cpus);
	/* bulkhead-vmm adds the virtio_mmio.device= entries to the command line. Its back ends'
	 * sockets, connected here when jailed. */
	for (size_t i = 0; !rc && i < LAUNCH_FS_MAX + 1; i++) {
		bool vsock = i == LAUNCH_FS_MAX;
		const char *sock = vsock ? l->vsock_sock : l->fs[i].sock;
		if (!sock)
			continue;
		if (l->jail) {
			int fd = backend_connect(l, i, sock);
			if (fd < 0) {
				snprintf(err, errlen, "connect to %s: %s", sock, strerror(-fd));
				rc = -1;
				break;
			}
			sock = vmm_fd(&f, fd);
		}
		engine_arg(&a, vsock ? "--virtio-vsock" : "--virtio-fs");
		if (vsock)
			engine_argf(&a, "%s%s,cid=%u", l->jail ? "fd=" : "", sock, l->guest_cid);
		else
			engine_argf(&a, "%s%s,tag=%s", l->jail ? "fd=" : "", sock, l->fs[i].tag);
	}
	if (!l->jail)
		engine_arg(&a, "--no-seccomp"); /* --no-jail is for debugging: all of it off */
	struct jail_spec spec = {
		.ids = l->jail,
		.empty_root = true,
		.extra_gid = (gid_t)-1,
		.file_writes = true, /* it sizes the memfd that holds guest RAM */
		.fds = f.fd,
		.nfds = f.n,
	};
	struct jail_san san; /* a sanitizer build's loader and libraries; else nothing */
	(void)jail_san_extend(&san, &spec); /* no mounts of its own: cannot fail */
	if (!rc)
		rc = engine_spawn(&a, "bulkhead-vmm", l->diag_w, l->verbose, l->jail ? &spec : NULL,
				  vm, err, errlen);
	for (size_t i = 0; i < f.n; i++)
		close(f.fd[i]);
	return rc;
}

/* reboot=k: bulkhead-vmm's i8042 reset is the guest's clean exit. */
const struct engine_ops engine_kvm_ops = { .name = "kvm", .reboot = "k", .start = kvm_start };
