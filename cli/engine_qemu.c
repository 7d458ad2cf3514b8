/* cli/engine_qemu.c: the QEMU engine — our kernel and initramfs under
 * qemu-system-x86_64 -M microvm, with the serial console on a pipe to us. */
#include "cli/engine_spawn.h"
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

int qemu_start(const struct launch *l, const struct engine_choice *c, struct guest *g, char *err,
	       size_t errlen)
{
	const char *qemu = engine_qemu_path();
	if (!qemu) {
		snprintf(err, errlen, "qemu-system-x86_64 not found: run 'make deps'");
		return -1;
	}
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
		/* --ram-file: the same shared RAM, in a file that outlives the session. It must
		 * be new, so nothing of ours is overwritten by guest memory. */
		int fd = open(l->ram_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			snprintf(err, errlen, "--ram-file %s: %s", l->ram_file, strerror(errno));
			return -1;
		}
		close(fd);
		engine_argf(&a, "memory-backend-file,id=mem,size=%uM,mem-path=%s,share=on",
			    l->mem_mib, l->ram_file);
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
	if (l->fs_sock) {
		engine_arg(&a, "-chardev");
		engine_argf(&a, "socket,id=fs0,path=%s", l->fs_sock);
		engine_arg(&a, "-device");
		engine_arg(&a, "vhost-user-fs-device,chardev=fs0,tag=" SHARE_FS_TAG);
	}
	if (l->vsock_sock) {
		engine_arg(&a, "-chardev");
		engine_argf(&a, "socket,id=vs0,path=%s", l->vsock_sock);
		engine_arg(&a, "-device");
		/* QEMU asks the back end for the guest CID (GET_CONFIG). */
		engine_arg(&a, "vhost-user-vsock-device,chardev=vs0");
	}
	engine_arg(&a, "-kernel");
	engine_arg(&a, l->kernel);
	engine_arg(&a, "-initrd");
	engine_arg(&a, l->initrd);
	engine_arg(&a, "-append");
	engine_arg(&a, l->cmdline);
	if (!l->no_jail) {
		/* QEMU's own seccomp filter on top of our jail: no obsolete calls, no privilege
		 * changes, no new processes, no scheduling or resource changes. */
		engine_arg(&a, "-sandbox");
		engine_arg(&a, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
			       "resourcecontrol=deny");
	}
	return engine_spawn(&a, "qemu", l->diag_w, l->verbose, !l->no_jail, true, g, err, errlen);
}
