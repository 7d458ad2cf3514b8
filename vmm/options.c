/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/options.c: bulkhead-vmm's command line. Every user-given number is strict decimal in
 * range, every descriptor is open and of the kind its option needs, each refusal is one
 * line naming the option and what it wants. */
#include "vmm/options.h"

#include "lib/test_guest_abi.h"
#include "lib/vmm_exit.h"
#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/vm.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define VMM_MEM_MIB_DEFAULT	  16
#define VMM_LINUX_MEM_MIB_DEFAULT 256
#define VMM_TIMEOUT_MS_MAX	  (24ULL * 3600 * 1000)
#define VMM_KVM_MAJOR		  10  /* /dev/kvm is a misc device ... */
#define VMM_KVM_MINOR		  232 /* ... with a fixed minor (KVM_MINOR) */

#if defined(__aarch64__)
#define VMM_ARCH_HELP                                                                      \
	"This is the arm64 build: --kernel takes an arm64 Image (loaded at its text offset,\n" \
	"the device tree at the end of RAM); the guest's PSCI power-off or reset is its clean\n" \
	"exit; test guests and snapshots are x86-64 only.\n"
#else
#define VMM_ARCH_HELP ""
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bulkhead-vmm --kernel PATH|--kernel-fd N [--initrd PATH|--initrd-fd N]\n"
		"                    [--cmdline STR] [--virtio-fs ...] [--virtio-vsock ...] "
		"[COMMON]\n"
		"       bulkhead-vmm --test-guest FILE|--test-guest-fd N [--machine [--initrd "
		"...]\n"
		"                    [--cmdline STR] [--virtio-fs ...] [--virtio-vsock ...]] "
		"[COMMON]\n"
		"       bulkhead-vmm --restore-fd N [--virtio-fs ...] [--virtio-vsock ...] "
		"[COMMON]\n"
		"COMMON: [--mem MIB] [--cpus N] [--timeout-ms N] [--kvm-fd N] [--snapshot-fd N]\n"
		"        [--no-seccomp] [--jail-selftest]\n"
		"\n"
		"Linux mode boots an ELF vmlinux or a bzImage directly in 64-bit mode; the 8250\n"
		"console (ttyS0) goes to stdout byte-exact. Use reboot=k: the guest's reset is "
		"its\n"
		"clean exit. Test mode runs a flat freestanding binary at 0x%x (ABI:\n"
		"lib/test_guest_abi.h); --machine gives it Linux mode's devices.\n"
		VMM_ARCH_HELP
		"\n"
		"  --kernel PATH      ELF vmlinux or bzImage (boot protocol >= 2.12)\n"
		"  --initrd PATH      initramfs, placed below the kernel's initrd_addr_max\n"
		"  --cmdline STR      kernel command line (at most %d bytes)\n"
		"  --test-guest FILE  the flat binary to run\n"
		"  --kernel-fd N, --initrd-fd N, --test-guest-fd N\n"
		"                     the same, read from descriptor N (> 2), an open regular "
		"file\n"
		"  --machine          test mode with the Linux machine's devices and zero page\n"
		"                     (virtio devices included)\n"
		"  --mem MIB          guest RAM, %u..%llu MiB (default %u; Linux %u)\n"
		"  --cpus N           vCPUs, 1..%u (default 1)\n"
		"  --timeout-ms N     stop the guest after N ms (default 0: never)\n"
		"  --kvm-fd N         use descriptor N, an open /dev/kvm (default: open /dev/kvm)\n"
		"  --snapshot-fd N    on SIGUSR1, pause the guest, save it whole to descriptor N\n"
		"                     (a regular file open for writing, mode 0600) and exit %d;\n"
		"                     if saving fails, say why and let the guest run on\n"
		"  --restore-fd N     start from the snapshot in descriptor N (mode 0600; ours or root's)\n"
		"                     instead of an image: --mem and --cpus, if given, must be\n"
		"                     the snapshot's; a damaged or foreign file is refused\n"
		"  --virtio-fs SOCKET,tag=TAG   virtio-fs served by the vhost-user back end at\n"
		"                     SOCKET (virtiofsd); the kernel mounts it by TAG (1..%d "
		"bytes)\n"
		"  --virtio-fs fd=N,tag=TAG     the same over descriptor N, a Unix socket already\n"
		"                     connected to the back end (./fd=N names a file); up to %d\n"
		"                     devices, each with its own tag\n"
		"  --virtio-vsock SOCKET,cid=C  virtio-vsock served by the back end at SOCKET\n"
		"                     (bulkhead-vsock); the guest's CID is C (3..%u)\n"
		"  --virtio-vsock fd=N,cid=C    the same over descriptor N (connected)\n"
		"  --no-seccomp       do not install the system-call allow-lists (debugging only)\n"
		"  --jail-selftest    test hook: report what the jail allows, then make a call\n"
		"                     outside the list (the process must die of SIGSYS) before\n"
		"                     any guest instruction\n"
		"\n"
		"With descriptors for every file, bulkhead-vmm needs no file at all: it runs in "
		"an\n"
		"empty root. After set-up each thread keeps a short allow-list (vmm/seccomp.c).\n"
		"\n"
		"Exit status (lib/vmm_exit.h):\n"
		"  0       Linux mode: the guest reset itself (its normal end, or a panic)\n"
		"  0..%u  test mode: the guest's own code, written to port 0x%x\n"
		"  %d    guest halted            %d  guest shut down (triple fault)\n"
		"  %d    KVM internal error      %d  KVM entry failure\n"
		"  %d    exit code out of range  %d  unexpected exit\n"
		"  %d    test mode: guest reset   %d  a vhost-user back end failed\n"
		"  %d    saved to --snapshot-fd\n"
		"  %d    timeout                 %d  bulkhead-vmm failed (one line on stderr)\n"
		"Killed by SIGPIPE when its stdout's reader goes away, as a filter is.\n",
		TG_LOAD_GPA, VMM_CMDLINE_MAX - 1, VMM_MEM_MIB_MIN,
		(unsigned long long)VMM_MEM_MIB_MAX, VMM_MEM_MIB_DEFAULT, VMM_LINUX_MEM_MIB_DEFAULT,
		VM_MAX_VCPUS, VMM_EXIT_SNAPSHOT, VIRTIO_FS_TAG_MAX, VMM_FS_MAX, UINT32_MAX - 1,
		TG_EXIT_MAX, TG_PORT_EXIT, VMM_EXIT_HALTED, VMM_EXIT_SHUTDOWN,
		VMM_EXIT_INTERNAL_ERROR, VMM_EXIT_FAIL_ENTRY, VMM_EXIT_BAD_CODE,
		VMM_EXIT_UNEXPECTED, VMM_EXIT_RESET, VMM_EXIT_BACKEND, VMM_EXIT_SNAPSHOT,
		VMM_EXIT_TIMEOUT, VMM_EXIT_SETUP);
}

/* Strict decimal: no sign, no junk, within [min, max]. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* A descriptor number: above 2 (0-2 are stdin and the VMM's own console and diagnostics). */
static int parse_fd(const char *s, int *fd)
{
	uint64_t v;
	if (parse_u64(s, 3, INT_MAX, &v))
		return -1;
	*fd = (int)v;
	return 0;
}

/* "PATH,key=VALUE": splits in place (optarg is ours to change); VALUE non-empty. */
static int split_device(char *arg, const char *key, const char **path, const char **val)
{
	char *comma = strrchr(arg, ',');
	if (!comma || comma == arg || strncmp(comma + 1, key, strlen(key)) != 0 ||
	    !comma[1 + strlen(key)])
		return -1;
	*comma = '\0';
	*path = arg;
	*val = comma + 1 + strlen(key);
	return 0;
}

/* The SOCKET part of a device: "fd=N" is a descriptor, anything else a path. */
static int device_socket(const char **path, int *fd)
{
	if (strncmp(*path, "fd=", 3) != 0)
		return 0;
	if (parse_fd(*path + 3, fd))
		return -1;
	*path = NULL;
	return 0;
}

static int bad_value(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "bulkhead-vmm: %s %s: want %s\n", opt, val, want);
	return -1;
}

/* What a descriptor option needs its descriptor to be. */
enum fd_kind { FD_REGULAR, FD_KVM, FD_SOCKET };

/* opt ends in its separator: "--kernel-fd 3: ...", "--virtio-fs fd=5: ...". */
static int bad_fd(const char *opt, int fd, const char *what, const char *hint)
{
	fprintf(stderr, "bulkhead-vmm: %s%d: %s; %s\n", opt, fd, what, hint);
	return -1;
}

static int check_fd(const char *opt, int fd, enum fd_kind kind)
{
	struct stat st;
	int v = 0;
	socklen_t len = sizeof(v);
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0)
		return bad_fd(opt, fd, "not an open descriptor",
			      "open it for bulkhead-vmm (e.g. N<FILE in a shell)");
	switch (kind) {
	case FD_REGULAR:
		if (!S_ISREG(st.st_mode))
			return bad_fd(opt, fd, "not a regular file", "pass the image file itself");
		return 0;
	case FD_KVM:
		if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != VMM_KVM_MAJOR ||
		    minor(st.st_rdev) != VMM_KVM_MINOR)
			return bad_fd(opt, fd, "not /dev/kvm",
				      "pass an open /dev/kvm (N<>/dev/kvm)");
		return 0;
	case FD_SOCKET:
		if (!S_ISSOCK(st.st_mode) || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 ||
		    v != AF_UNIX || getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 ||
		    v != SOCK_STREAM || getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
			return bad_fd(opt, fd, "not a connected Unix stream socket",
				      "connect it to the vhost-user back end first");
		return 0;
	}
	return -1;
}

/* Every descriptor exists, is of its kind, and serves one option only (each is closed
 * when its job is done). */
static int check_fds(const struct vmm_opts *o)
{
	const struct {
		const char *opt;
		int fd;
		enum fd_kind kind;
	} f[] = {
		{ "--test-guest-fd ", o->test_guest.fd, FD_REGULAR },
		{ "--kernel-fd ", o->kernel.fd, FD_REGULAR },
		{ "--initrd-fd ", o->initrd.fd, FD_REGULAR },
		{ "--kvm-fd ", o->kvm_fd, FD_KVM },
		{ "--snapshot-fd ", o->snapshot_fd, FD_REGULAR },
		{ "--restore-fd ", o->restore_fd, FD_REGULAR },
		{ "--virtio-vsock fd=", o->vsock_fd, FD_SOCKET },
		{ "--virtio-fs fd=", o->fs[0].fd, FD_SOCKET },
		{ "--virtio-fs fd=", o->fs[1].fd, FD_SOCKET },
		{ "--virtio-fs fd=", o->fs[2].fd, FD_SOCKET },
		{ "--virtio-fs fd=", o->fs[3].fd, FD_SOCKET },
	};
	_Static_assert(VMM_FS_MAX == 4, "one row per virtio-fs device above");
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		for (size_t j = 0; j < i; j++)
			if (f[i].fd >= 0 && f[i].fd == f[j].fd) {
				fprintf(stderr,
					"bulkhead-vmm: descriptor %d given to both %sN and %sN; "
					"give each its own\n",
					f[i].fd, f[j].opt, f[i].opt);
				return -1;
			}
		if (check_fd(f[i].opt, f[i].fd, f[i].kind))
			return -1;
	}
	return 0;
}

static int usage_error(const char *msg)
{
	fprintf(stderr, "bulkhead-vmm: %s; see --help\n", msg);
	return -1;
}

/* Which options go together, once all are read. */
static int check_combination(struct vmm_opts *o)
{
	bool test_guest = o->test_guest.path || o->test_guest.fd >= 0;
	bool kernel = o->kernel.path || o->kernel.fd >= 0;
	bool initrd = o->initrd.path || o->initrd.fd >= 0;

	if ((o->test_guest.path && o->test_guest.fd >= 0) ||
	    (o->kernel.path && o->kernel.fd >= 0) || (o->initrd.path && o->initrd.fd >= 0))
		return usage_error("give a file as a PATH or as a descriptor (-fd N), not both");
	if (o->restore_fd >= 0) {
		if (test_guest || kernel || initrd || o->cmdline || o->machine)
			return usage_error(
				"--restore-fd starts the guest a snapshot holds: no "
				"--kernel, --initrd, --test-guest, --cmdline or --machine");
		o->mode = 0; /* the snapshot's, once main has read it */
		return check_fds(o);
	}
	if (!o->cpus)
		o->cpus = 1;
	if (test_guest == kernel)
		return usage_error("give exactly one of --kernel PATH (or --kernel-fd N) and "
				   "--test-guest FILE (or --test-guest-fd N)");
	if (test_guest && !o->machine && (initrd || o->cmdline))
		return usage_error("--initrd and --cmdline need --kernel or --machine");
	if ((o->nfs || o->vsock_sock || o->vsock_fd >= 0) && !kernel && !o->machine)
		return usage_error("--virtio-fs and --virtio-vsock need --kernel or --machine");
	if (kernel && o->machine)
		return usage_error("--machine is for --test-guest");
	o->mode = kernel ? VMM_MODE_LINUX : o->machine ? VMM_MODE_MACHINE : VMM_MODE_TEST;
	if (!o->mem_mib)
		o->mem_mib = kernel ? VMM_LINUX_MEM_MIB_DEFAULT : VMM_MEM_MIB_DEFAULT;
	return check_fds(o);
}

enum {
	OPT_TEST_GUEST = 256,
	OPT_TEST_GUEST_FD,
	OPT_KERNEL,
	OPT_KERNEL_FD,
	OPT_INITRD,
	OPT_INITRD_FD,
	OPT_KVM_FD,
	OPT_CMDLINE,
	OPT_MACHINE,
	OPT_MEM,
	OPT_CPUS,
	OPT_TIMEOUT_MS,
	OPT_VIRTIO_FS,
	OPT_VIRTIO_VSOCK,
	OPT_SNAPSHOT_FD,
	OPT_RESTORE_FD,
	OPT_NO_SECCOMP,
	OPT_JAIL_SELFTEST,
	OPT_HELP
};

/* One option; 0, or -1 after its line. */
static int parse_one(int c, char *arg, struct vmm_opts *o)
{
	char want[96];
	const char *cid;
	uint64_t v;

	switch (c) {
	case OPT_TEST_GUEST:
		o->test_guest.path = arg;
		return 0;
	case OPT_KERNEL:
		o->kernel.path = arg;
		return 0;
	case OPT_INITRD:
		o->initrd.path = arg;
		return 0;
	case OPT_TEST_GUEST_FD:
		return parse_fd(arg, &o->test_guest.fd)
			       ? bad_value("--test-guest-fd", arg, "a descriptor number above 2")
			       : 0;
	case OPT_KERNEL_FD:
		return parse_fd(arg, &o->kernel.fd)
			       ? bad_value("--kernel-fd", arg, "a descriptor number above 2")
			       : 0;
	case OPT_INITRD_FD:
		return parse_fd(arg, &o->initrd.fd)
			       ? bad_value("--initrd-fd", arg, "a descriptor number above 2")
			       : 0;
	case OPT_KVM_FD:
		return parse_fd(arg, &o->kvm_fd)
			       ? bad_value("--kvm-fd", arg, "a descriptor number above 2")
			       : 0;
	case OPT_SNAPSHOT_FD:
		return parse_fd(arg, &o->snapshot_fd)
			       ? bad_value("--snapshot-fd", arg, "a descriptor number above 2")
			       : 0;
	case OPT_RESTORE_FD:
		return parse_fd(arg, &o->restore_fd)
			       ? bad_value("--restore-fd", arg, "a descriptor number above 2")
			       : 0;
	case OPT_CMDLINE:
		snprintf(want, sizeof(want), "at most %d bytes", VMM_CMDLINE_MAX - 1);
		if (strlen(arg) > VMM_CMDLINE_MAX - 1)
			return bad_value("--cmdline", "(too long)", want);
		o->cmdline = arg;
		return 0;
	case OPT_MACHINE:
		o->machine = true;
		return 0;
	case OPT_MEM:
		snprintf(want, sizeof(want), "a whole number of MiB, %u..%llu", VMM_MEM_MIB_MIN,
			 (unsigned long long)VMM_MEM_MIB_MAX);
		return parse_u64(arg, VMM_MEM_MIB_MIN, VMM_MEM_MIB_MAX, &o->mem_mib)
			       ? bad_value("--mem", arg, want)
			       : 0;
	case OPT_CPUS:
		snprintf(want, sizeof(want), "1..%u vCPUs", VM_MAX_VCPUS);
		if (parse_u64(arg, 1, VM_MAX_VCPUS, &v))
			return bad_value("--cpus", arg, want);
		o->cpus = (unsigned)v;
		return 0;
	case OPT_TIMEOUT_MS:
		snprintf(want, sizeof(want), "milliseconds, 0..%llu",
			 (unsigned long long)VMM_TIMEOUT_MS_MAX);
		return parse_u64(arg, 0, VMM_TIMEOUT_MS_MAX, &o->timeout_ms)
			       ? bad_value("--timeout-ms", arg, want)
			       : 0;
	case OPT_VIRTIO_FS: {
		if (o->nfs == VMM_FS_MAX) {
			snprintf(want, sizeof(want), "--virtio-fs given more than %d times",
				 VMM_FS_MAX);
			return usage_error(want);
		}
		struct vmm_fs_opt *fs = &o->fs[o->nfs];
		if (split_device(arg, "tag=", &fs->sock, &fs->tag) ||
		    strlen(fs->tag) > VIRTIO_FS_TAG_MAX || device_socket(&fs->sock, &fs->fd))
			return bad_value("--virtio-fs", arg,
					 "SOCKET,tag=TAG or fd=N,tag=TAG (TAG 1..36 bytes, N > 2)");
		/* The guest mounts by tag: two devices with one tag would be a coin toss. */
		for (unsigned i = 0; i < o->nfs; i++)
			if (strcmp(o->fs[i].tag, fs->tag) == 0)
				return bad_value("--virtio-fs", arg, "a tag no other device has");
		o->nfs++;
		return 0;
	}
	case OPT_VIRTIO_VSOCK:
		if (o->vsock_cid)
			return usage_error("--virtio-vsock given twice");
		if (split_device(arg, "cid=", &o->vsock_sock, &cid) ||
		    parse_u64(cid, VIRTIO_VSOCK_CID_MIN, UINT32_MAX - 1, &o->vsock_cid) ||
		    device_socket(&o->vsock_sock, &o->vsock_fd))
			return bad_value("--virtio-vsock", arg,
					 "SOCKET,cid=C or fd=N,cid=C (C 3..4294967294, N > 2)");
		return 0;
	case OPT_NO_SECCOMP:
		o->no_seccomp = true;
		return 0;
	case OPT_JAIL_SELFTEST:
		o->jail_selftest = true;
		return 0;
	}
	return -1;
}

int vmm_options_parse(int argc, char **argv, struct vmm_opts *o)
{
	static const struct option longopts[] = {
		{ "test-guest", required_argument, NULL, OPT_TEST_GUEST },
		{ "test-guest-fd", required_argument, NULL, OPT_TEST_GUEST_FD },
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		{ "kernel-fd", required_argument, NULL, OPT_KERNEL_FD },
		{ "initrd", required_argument, NULL, OPT_INITRD },
		{ "initrd-fd", required_argument, NULL, OPT_INITRD_FD },
		{ "kvm-fd", required_argument, NULL, OPT_KVM_FD },
		{ "cmdline", required_argument, NULL, OPT_CMDLINE },
		{ "machine", no_argument, NULL, OPT_MACHINE },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS },
		{ "virtio-fs", required_argument, NULL, OPT_VIRTIO_FS },
		{ "virtio-vsock", required_argument, NULL, OPT_VIRTIO_VSOCK },
		{ "snapshot-fd", required_argument, NULL, OPT_SNAPSHOT_FD },
		{ "restore-fd", required_argument, NULL, OPT_RESTORE_FD },
		{ "no-seccomp", no_argument, NULL, OPT_NO_SECCOMP },
		{ "jail-selftest", no_argument, NULL, OPT_JAIL_SELFTEST },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->test_guest.fd = o->kernel.fd = o->initrd.fd = -1;
	o->kvm_fd = o->vsock_fd = o->snapshot_fd = o->restore_fd = -1;
	for (unsigned i = 0; i < VMM_FS_MAX; i++)
		o->fs[i].fd = -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h' || c == OPT_HELP) {
			usage(stdout);
			exit(0);
		}
		if (c == '?' || c == ':') {
			fprintf(stderr,
				"bulkhead-vmm: unknown or incomplete option %s; see --help\n",
				argv[optind - 1]);
			return -1;
		}
		if (parse_one(c, optarg, o))
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "bulkhead-vmm: unexpected argument %s; see --help\n", argv[optind]);
		return -1;
	}
	return check_combination(o);
}
