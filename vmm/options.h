/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/options.h: bulkhead-vmm's command line — what a run is asked to do, every number and
 * descriptor checked before any VM exists. */
#ifndef BULKHEAD_VMM_OPTIONS_H
#define BULKHEAD_VMM_OPTIONS_H

#include "vmm/loader.h"

#include <stdbool.h>
#include <stdint.h>

/* What kind of guest runs; a device declares the modes it exists in. */
#define VMM_MODE_TEST	 0x1 /* --test-guest: bare test ports */
#define VMM_MODE_MACHINE 0x2 /* --test-guest --machine: the Linux machine plus test ports */
#define VMM_MODE_LINUX	 0x4 /* --kernel */
#define VMM_MODE_ANY	 0x7

/* Files come as paths (bulkhead-vmm opens them) or as descriptors a launcher opened before
 * an empty root (fd >= 3, checked for their kind; -1 when not given). */
#define VMM_MEM_MIB_MIN 2 /* the image loads at 1 MiB */
#define VMM_MEM_MIB_MAX 3072ULL /* x86 keeps RAM below its MMIO hole (vmm/x86/layout.h) */
#define VMM_CMDLINE_MAX 2048 /* COMMAND_LINE_SIZE on x86 and arm64, its NUL included */

/* virtio-fs devices in one VM: a session's work share and its image root, with room. */
#define VMM_FS_MAX 4

struct vmm_opts {
	struct loader_src test_guest; /* VMM_MODE_TEST / _MACHINE */
	struct loader_src kernel;     /* VMM_MODE_LINUX */
	struct loader_src initrd;
	int kvm_fd; /* an open /dev/kvm, or -1: open it */
	const char *cmdline;
	bool machine;
	unsigned mode;
	uint64_t mem_mib;
	unsigned cpus;
	uint64_t timeout_ms;
	/* vhost-user devices (Linux mode): a socket path or a connected socket (fd). */
	struct vmm_fs_opt {
		const char *sock, *tag;
		int fd;
	} fs[VMM_FS_MAX]; /* --virtio-fs, in the order given */
	unsigned nfs;
	const char *vsock_sock;
	int vsock_fd;
	uint64_t vsock_cid;
	/* Snapshots (vmm/snapshot.h): --snapshot-fd N is where SIGUSR1 saves the VM (then it
	 * ends with VMM_EXIT_SNAPSHOT); --restore-fd N starts from a saved VM instead of an
	 * image. Restoring, mode is 0 and mem_mib/cpus 0 unless given until main reads the
	 * snapshot's (given ones must match it). */
	int snapshot_fd;
	int restore_fd;
	bool no_seccomp;    /* --no-seccomp: no allow-lists (debugging) */
	bool jail_selftest; /* --jail-selftest: report, probe, die of SIGSYS before the guest */
};

/* Parses and checks argv into o (--help prints usage and exits 0). Returns 0, or -1 after
 * one line on stderr. */
int vmm_options_parse(int argc, char **argv, struct vmm_opts *o);

#endif
