/* SPDX-License-Identifier: Apache-2.0 */
/* session/engine.h: the engines that run a session's VM behind one table of operations
 * (bulkhead-vmm on KVM, QEMU microvm), and the choice between them. */
#ifndef BULKHEAD_SESSION_ENGINE_H
#define BULKHEAD_SESSION_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum engine_kind {
	ENGINE_AUTO,
	ENGINE_KVM,  /* bulkhead-vmm */
	ENGINE_QEMU, /* qemu-system-x86_64 -M microvm */
};

#define LAUNCH_FS_MAX 4 /* work, image, bind0, bind1 */

/* Everything an engine needs to start a guest. */
struct jail_ids;
struct launch {
	const char *kernel, *initrd, *cmdline;
	unsigned mem_mib, cpus;
	const char *ram_file;  /* guest RAM in this (new) file, kept afterwards; NULL: a memfd */
	struct jail_ids *jail; /* the session's jail (jail/jail.h); NULL: --no-jail */
	bool verbose;
	/* virtio-fs devices: the work share ("work") and an image's root ("image"), each a
	 * vhost-user-fs socket (unused entries NULL), in this order. */
	struct launch_fs {
		const char *sock, *tag;
	} fs[LAUNCH_FS_MAX];
	int diag_w;		/* write end for the engine's stderr */
	const char *vsock_sock; /* vhost-user-vsock socket, NULL if no vsock */
	unsigned guest_cid;
	/* Templates (kvm engine, jailed; session/template.h), else -1: the guest is restored
	 * from restore_fd instead of booted, or saved into snapshot_fd when asked (SIGUSR1). */
	int restore_fd, snapshot_fd;
	/* Jailed only: the virtio-fs connections to keep (non-NULL), entry i for fs[i]. An entry
	 * >= 0 is an open connection the VMM gets a copy of; -1 is filled with a copy of the
	 * new one. The caller closes them. */
	int *fs_keep;
};

/* A started VM process. */
struct vm_proc {
	pid_t pid;
	int console_fd;	   /* the guest's serial console, read side */
	const char *label; /* for messages: "qemu", "bulkhead-vmm" */
};

struct engine_choice;
struct engine_ops {
	const char *name;
	/* The kernel's reboot= method: how a guest's power-off becomes the engine's exit. */
	const char *reboot;
	/* Starts the VM. Returns 0, or -1 with a one-line reason in err. */
	int (*start)(const struct launch *l, const struct engine_choice *c, struct vm_proc *vm,
		     char *err, size_t errlen);
};

extern const struct engine_ops engine_kvm_ops;	/* engine_kvm.c */
extern const struct engine_ops engine_qemu_ops; /* engine_qemu.c */

struct engine_choice {
	enum engine_kind kind; /* never ENGINE_AUTO after engine_choose() */
	const struct engine_ops *ops;
	bool qemu_accel_kvm; /* QEMU engine: -accel kvm (else TCG) */
	bool kvm_emulated;   /* kvm engine: this host emulates guest kernel mode (quirks) */
	char why[256];	     /* one line: why this engine */
};

/* Parses "auto" | "kvm" | "qemu"; returns -1 on anything else. */
int engine_parse(const char *name, enum engine_kind *out);
const char *engine_name(enum engine_kind kind);

/* Resolves `requested` for this host (probing KVM when needed). Returns 0, or
 * -1 with a one-line reason in out->why when the requested engine cannot run.
 * kvm is allowed where `bulkhead doctor` says KVM runs Linux user space; auto picks it
 * there, QEMU elsewhere. ENGINE_KVM_FORCE_ENV=1 allows kvm anyway (the Linux smoke test on
 * hosts like kvm_pvm, where the guest boots to /init and its user space then dies). */
#define ENGINE_KVM_FORCE_ENV "BULKHEAD_KVM_FORCE"
int engine_choose(enum engine_kind requested, struct engine_choice *out);

/* Path of qemu-system-x86_64 (or $BULKHEAD_QEMU), NULL when not installed. */
const char *engine_qemu_path(void);
/* Path of bulkhead-vmm next to this executable; 0 or -1 when too long. */
int engine_vmm_path(char *buf, size_t len);

/* The kernel parameters every guest starts with, for engine c: console, reboot and panic
 * handling, quirks for hosts that emulate guest kernel mode, quiet unless asked, the work
 * share's mode ("rw", "ro" or NULL) and whether a broker serves the session. The one place
 * they come from. Returns 0, or -1 if they do not fit in len. */
int engine_cmdline(const struct engine_choice *c, bool quiet, const char *work_mode, bool broker,
		   char *buf, size_t len);

#endif
