/* SPDX-License-Identifier: Apache-2.0 */
/* session/engine_qemu.c: the QEMU engine — our kernel and initramfs under
 * qemu-system-x86_64 -M microvm, with the serial console on a pipe to us. */
#include "session/engine_spawn.h"
#include "jail/jail.h"
#include "jail/jail_loader.h"
#include "lib/unix_listen.h"
#include "session/engine.h"
#include "session/share_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define QEMU_JAIL_MOUNTS 16

/* Paths inside the jail's root. */
#define JAIL_KERNEL "/boot/kernel"
#define JAIL_INITRD "/boot/initrd"
#define JAIL_RAM    "/ram"

struct qemu_jail {
	struct jail_mount mounts[QEMU_JAIL_MOUNTS];
	size_t nmounts;
	struct jail_loader loader; /* its loader and libraries: /usr, the cache, /lib* links */
	int fds[LAUNCH_FS_MAX + 1];
	size_t nfds;
	struct jail_spec spec;
};

static void add_mount(struct qemu_jail *j, const char *src, const char *dst, unsigned flags)
{
	j->mounts[j->nmounts++] = (struct jail_mount){ .src = src, .dst = dst, .flags = flags };
}

/* QEMU is a distribution binary, dynamically linked, loading modules and firmware from /usr:
 * its root holds /usr read-only (programs and libraries, nothing secret), the kernel and
 * initramfs, and /dev/kvm when it uses KVM. Its back ends come as connected sockets. */
static int qemu_jail_plan(struct qemu_jail *j, const struct launch *l,
			  const struct engine_choice *c, char *err, size_t errlen)
{
	memset(j, 0, sizeof(*j));
	j->spec.extra_gid = (gid_t)-1;
	const char *files[] = { l->kernel, l->initrd };
	for (size_t i = 0; i < 2; i++)
		if (!jail_ids_can_open(l->jail, files[i], false)) {
			snprintf(err, errlen,
				 "%s is not readable by the jail's uid %u: make it world-readable",
				 files[i], (unsigned)l->jail->uid);
			return -1;
		}
	jail_loader_add(&j->loader, j->mounts, &j->nmounts, QEMU_JAIL_MOUNTS); /* fits: 8 of 16 */
	add_mount(j, l->kernel, JAIL_KERNEL, 0);
	add_mount(j, l->initrd, JAIL_INITRD, 0);
	if (c->qemu_accel_kvm) {
		struct stat st;
		if (stat("/dev/kvm", &st) < 0 || (st.st_mode & 060) != 060) {
			snprintf(err, errlen,
				 "the jail's uid cannot open /dev/kvm: give it a group with read "
				 "and write (Debian: root:kvm 0660), or use the kvm engine");
			return -1;
		}
		add_mount(j, "/dev/kvm", NULL, JAIL_MOUNT_DEV | JAIL_MOUNT_RW);
		j->spec.extra_gid = st.st_gid;
	}
	if (l->ram_file) {
		if (chown(l->ram_file, l->jail->uid, l->jail->gid) < 0) {
			snprintf(err, errlen, "--ram-file %s: %s", l->ram_file, strerror(errno));
			return -1;
		}
		add_mount(j, l->ram_file, JAIL_RAM, JAIL_MOUNT_RW);
	}
	const char *socks[LAUNCH_FS_MAX + 1];
	for (size_t i = 0; i < LAUNCH_FS_MAX; i++)
		socks[i] = l->fs[i].sock;
	socks[LAUNCH_FS_MAX] = l->vsock_sock;
	for (size_t i = 0; i < LAUNCH_FS_MAX + 1; i++) {
		if (!socks[i])
			continue;
		int fd = unix_connect(socks[i], false);
		if (fd < 0) {
			snprintf(err, errlen, "connect to %s: %s", socks[i], strerror(-fd));
			return -1;
		}
		j->fds[j->nfds++] = fd;
	}
	j->spec.ids = l->jail;
	j->spec.empty_root = true;
	j->spec.mounts = j->mounts;
	j->spec.nmounts = j->nmounts;
	j->spec.links = j->loader.links;
	j->spec.nlinks = j->loader.nlinks;
	j->spec.file_writes = true; /* it sizes the memfd that holds guest RAM */
	j->spec.fds = j->fds;
	j->spec.nfds = j->nfds;
	return 0;
}

static void qemu_jail_done(struct qemu_jail *j)
{
	for (size_t i = 0; i < j->nfds; i++)
		close(j->fds[i]);
	j->nfds = 0;
}

static int qemu_start(const struct launch *l, const struct engine_choice *c, struct vm_proc *vm,
		      char *err, size_t errlen)
{
	const char *qemu = engine_qemu_path();
	if (!qemu) {
		snprintf(err, errlen, "qemu-system-x86_64 not found: run 'make deps'");
		return -1;
	}
	static struct qemu_jail j; /* large: not on the stack */
	if (l->ram_file) {
		/* --ram-file: the same shared RAM, in a file that outlives the session. It must
		 * be new, so nothing of ours is overwritten by guest memory. */
		int fd = open(l->ram_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			snprintf(err, errlen, "--ram-file %s: %s", l->ram_file, strerror(errno));
			return -1;
		}
		close(fd);
	}
	if (l->jail && qemu_jail_plan(&j, l, c, err, errlen) < 0) {
		qemu_jail_done(&j);
		return -1;
	}
	/* Jailed, QEMU finds its files and back ends where the jail put them. */
	unsigned next_fd = 3;
	static struct engine_argv a; /* large: not on the stack */
	memset(&a, 0, sizeof(a));
	engine_arg(&a, qemu);
	/* microvm without ACPI or option ROMs: the smallest machine QEMU has. Guest RAM
	 * is a shared memfd so vhost-user back ends (virtiofsd) can map it. The RTC
	 * stays: without it the kernel waits a second for a clock that never ticks. */
	engine_arg(&a, "-M");
	engine_arg(&a, "microvm,acpi=off,x-option-roms=off,rtc=on,isa-serial=on,pit=on,pic=on,"
		       "memory-backend=mem");
	engine_arg(&a, "-object");
	if (l->ram_file) {
		engine_argf(&a, "memory-backend-file,id=mem,size=%uM,mem-path=%s,share=on",
			    l->mem_mib, l->jail ? JAIL_RAM : l->ram_file);
	} else {
		engine_argf(&a, "memory-backend-memfd,id=mem,size=%uM,share=on", l->mem_mib);
	}
	engine_arg(&a, "-m");
	engine_argf(&a, "%u", l->mem_mib);
	engine_arg(&a, "-smp");
	engine_argf(&a, "%u", l->cpus);
	/* Modern virtio-mmio only (virtiofsd refuses legacy devices). */
	engine_arg(&a, "-global");
	engine_arg(&a, "virtio-mmio.force-legacy=false");
	engine_arg(&a, "-accel");
	engine_arg(&a, c->qemu_accel_kvm ? "kvm" : "tcg");
	engine_arg(&a, "-cpu");
	engine_arg(&a, c->qemu_accel_kvm ? "host" : "max");
	engine_arg(&a, "-nodefaults");
	engine_arg(&a, "-no-user-config");
	engine_arg(&a, "-no-reboot");
	engine_arg(&a, "-display");
	engine_arg(&a, "none");
	engine_arg(&a, "-monitor");
	engine_arg(&a, "none");
	engine_arg(&a, "-serial");
	engine_arg(&a, "stdio");
	for (size_t i = 0; i < LAUNCH_FS_MAX; i++) {
		if (!l->fs[i].sock)
			continue;
		engine_arg(&a, "-chardev");
		if (l->jail)
			engine_argf(&a, "socket,id=fs%zu,fd=%u", i, next_fd++);
		else
			engine_argf(&a, "socket,id=fs%zu,path=%s", i, l->fs[i].sock);
		engine_arg(&a, "-device");
		engine_argf(&a, "vhost-user-fs-device,chardev=fs%zu,tag=%s", i, l->fs[i].tag);
	}
	if (l->vsock_sock) {
		engine_arg(&a, "-chardev");
		if (l->jail)
			engine_argf(&a, "socket,id=vs0,fd=%u", next_fd++);
		else
			engine_argf(&a, "socket,id=vs0,path=%s", l->vsock_sock);
		engine_arg(&a, "-device");
		/* QEMU asks the back end for the guest CID (GET_CONFIG). */
		engine_arg(&a, "vhost-user-vsock-device,chardev=vs0");
	}
	engine_arg(&a, "-kernel");
	engine_arg(&a, l->jail ? JAIL_KERNEL : l->kernel);
	engine_arg(&a, "-initrd");
	engine_arg(&a, l->jail ? JAIL_INITRD : l->initrd);
	engine_arg(&a, "-append");
	engine_arg(&a, l->cmdline);
	if (l->jail) {
		/* QEMU's own seccomp filter on top of our jail: no obsolete calls, no privilege
		 * changes, no new processes, no scheduling or resource changes. */
		engine_arg(&a, "-sandbox");
		engine_arg(&a, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
			       "resourcecontrol=deny");
	}
	int rc = engine_spawn(&a, "qemu", l->diag_w, l->verbose, l->jail ? &j.spec : NULL, vm, err,
			      errlen);
	qemu_jail_done(&j);
	return rc;
}

/* reboot=t: microvm has no i8042; -no-reboot turns the guest's triple fault into an exit. */
const struct engine_ops engine_qemu_ops = { .name = "qemu", .reboot = "t", .start = qemu_start };
