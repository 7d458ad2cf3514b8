/*
 * vmm/main.c: bulkhead-vmm — options, then acquire in order (VM, devices, images, vCPUs),
 * run, release in reverse. Devices are declared in vmm_devices[] below, not called from
 * here: to add one, give it an init/fini pair and a row (see vmm/machine.h and vmm/README.md).
 */
#include "vmm/exit_status.h"
#include "vmm/loader.h"
#include "vmm/loader_flat.h"
#include "vmm/log.h"
#include "vmm/machine.h"
#include "vmm/test_guest_abi.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/layout.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VMM_MEM_MIB_DEFAULT	  16
#define VMM_LINUX_MEM_MIB_DEFAULT 256
#define VMM_MEM_MIB_MIN		  2 /* the image loads at 1 MiB */
#define VMM_MEM_MIB_MAX		  (X86_RAM_MAX_BELOW_4G >> 20)
#define VMM_TIMEOUT_MS_MAX	  (24ULL * 3600 * 1000)

/* --- devices -------------------------------------------------------------------------- */

static int dev_testdev_init(struct machine *m)
{
	return testdev_init(&m->testdev, &m->vm, STDOUT_FILENO, m->o->mode == VMM_MODE_TEST);
}

static void dev_testdev_fini(struct machine *m)
{
	testdev_finish(&m->testdev);
}

static int dev_uart_init(struct machine *m)
{
	return uart_init(&m->uart, &m->vm, X86_UART_PORT, X86_UART_GSI, STDOUT_FILENO);
}

static void dev_uart_fini(struct machine *m)
{
	uart_flush(&m->uart);
}

static int dev_i8042_init(struct machine *m)
{
	/* A Linux session ends by rebooting (reboot=k): that is its clean exit. */
	return i8042_init(&m->i8042, &m->vm,
			  m->o->mode == VMM_MODE_LINUX ? VMM_EXIT_OK : VMM_EXIT_RESET);
}

static int dev_boot_timer_init(struct machine *m)
{
	return boot_timer_init(&m->boot_timer, &m->vm, m->main_ns);
}

/* The vhost-user devices: connected, negotiated and given guest RAM here, before
 * any vCPU exists; announced to the kernel on its command line. */
static int dev_virtio_init(struct machine *m)
{
	const struct vmm_opts *o = m->o;
	virtio_devs_init(&m->virtio, &m->vm, X86_VIRTIO_MMIO_GPA, X86_VIRTIO_MMIO_MAX,
			 X86_VIRTIO_GSI_BASE);
	const struct vhost_user_dev_cfg cfgs[] = {
		{ .type = VHOST_USER_DEV_FS, .socket_path = o->fs_sock, .name = "virtiofsd",
		  .fs_tag = o->fs_tag },
		{ .type = VHOST_USER_DEV_VSOCK, .socket_path = o->vsock_sock,
		  .name = "bulkhead-vsock", .vsock_cid = o->vsock_cid },
	};
	int rc;
	for (size_t i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++)
		if (cfgs[i].socket_path && (rc = virtio_vhost_user_add(&m->virtio, &cfgs[i])))
			return rc;
	int n = snprintf(m->cmdline, sizeof(m->cmdline), "%s", o->cmdline ? o->cmdline : "");
	if (m->virtio.n) {
		size_t used = (size_t)n;
		if (used + 1 < sizeof(m->cmdline)) {
			m->cmdline[used++] = ' ';
			n = virtio_devs_cmdline(&m->virtio, m->cmdline + used,
						sizeof(m->cmdline) - used);
		}
		if (n < 0 || used + (size_t)n >= sizeof(m->cmdline)) {
			vmm_log_setup("kernel command line too long for the virtio devices", 0,
				      "shorten --cmdline");
			return -E2BIG;
		}
	}
	return m->virtio.n ? virtio_devs_watch(&m->virtio, NULL, NULL) : 0;
}

static void dev_virtio_fini(struct machine *m)
{
	virtio_devs_destroy(&m->virtio);
}

static const struct vmm_device vmm_devices[] = {
	{ "test ports", VMM_MODE_TEST | VMM_MODE_MACHINE, dev_testdev_init, dev_testdev_fini },
	{ "8250 UART", VMM_MODE_MACHINE | VMM_MODE_LINUX, dev_uart_init, dev_uart_fini },
	{ "i8042", VMM_MODE_MACHINE | VMM_MODE_LINUX, dev_i8042_init, NULL },
	{ "virtio (vhost-user)", VMM_MODE_LINUX, dev_virtio_init, dev_virtio_fini },
	{ "boot timer", VMM_MODE_MACHINE | VMM_MODE_LINUX, dev_boot_timer_init, NULL },
	/* virtio-mmio devices (vmm/virtio/) go here, VMM_MODE_LINUX. */
};
#define VMM_NDEVICES (sizeof(vmm_devices) / sizeof(vmm_devices[0]))

/* --- options --------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bulkhead-vmm --kernel PATH [--initrd PATH] [--cmdline STR] [--mem MIB]\n"
		"                    [--cpus N] [--timeout-ms N]\n"
		"       bulkhead-vmm --test-guest FILE [--machine [--initrd PATH] [--cmdline "
		"STR]]\n"
		"                    [--mem MIB] [--cpus N] [--timeout-ms N]\n"
		"\n"
		"Linux mode boots an ELF vmlinux or a bzImage directly in 64-bit mode; the 8250\n"
		"console (ttyS0) goes to stdout byte-exact. Use reboot=k: the guest's reset is "
		"its\n"
		"clean exit. Test mode runs a flat freestanding binary at 0x%x (ABI:\n"
		"vmm/test_guest_abi.h); --machine gives it Linux mode's devices.\n"
		"\n"
		"  --kernel PATH      ELF vmlinux or bzImage (boot protocol >= 2.12)\n"
		"  --initrd PATH      initramfs, placed below the kernel's initrd_addr_max\n"
		"  --cmdline STR      kernel command line (at most %d bytes)\n"
		"  --test-guest FILE  the flat binary to run\n"
		"  --machine          test mode with the Linux machine's devices and zero page\n"
		"  --mem MIB          guest RAM, %u..%llu MiB (default %u; Linux %u)\n"
		"  --cpus N           vCPUs, 1..%u (default 1)\n"
		"  --timeout-ms N     stop the guest after N ms (default 0: never)\n"
		"  --virtio-fs SOCKET,tag=TAG   virtio-fs served by the vhost-user back end at\n"
		"                     SOCKET (virtiofsd); the kernel mounts it by TAG\n"
		"  --virtio-vsock SOCKET,cid=N  virtio-vsock served by the back end at SOCKET\n"
		"                     (bulkhead-vsock); the guest's CID is N\n"
		"\n"
		"Exit status (vmm/exit_status.h):\n"
		"  0       Linux mode: the guest reset itself (its normal end, or a panic)\n"
		"  0..%u  test mode: the guest's own code, written to port 0x%x\n"
		"  %d    guest halted            %d  guest shut down (triple fault)\n"
		"  %d    KVM internal error      %d  KVM entry failure\n"
		"  %d    exit code out of range  %d  unexpected exit\n"
		"  %d    test mode: guest reset   %d  a vhost-user back end failed\n"
		"  %d    timeout                 %d  bulkhead-vmm failed (one line on stderr)\n",
		TG_LOAD_GPA, X86_CMDLINE_MAX - 1, VMM_MEM_MIB_MIN,
		(unsigned long long)VMM_MEM_MIB_MAX, VMM_MEM_MIB_DEFAULT, VMM_LINUX_MEM_MIB_DEFAULT,
		VM_MAX_VCPUS, TG_EXIT_MAX, TG_PORT_EXIT, VMM_EXIT_HALTED, VMM_EXIT_SHUTDOWN,
		VMM_EXIT_INTERNAL_ERROR, VMM_EXIT_FAIL_ENTRY, VMM_EXIT_BAD_CODE,
		VMM_EXIT_UNEXPECTED, VMM_EXIT_RESET, VMM_EXIT_BACKEND, VMM_EXIT_TIMEOUT, VMM_EXIT_SETUP);
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

static int bad_value(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "bulkhead-vmm: %s %s: want %s\n", opt, val, want);
	return -1;
}

static int parse_args(int argc, char **argv, struct vmm_opts *o)
{
	enum {
		OPT_TEST_GUEST = 256,
		OPT_KERNEL,
		OPT_INITRD,
		OPT_CMDLINE,
		OPT_MACHINE,
		OPT_MEM,
		OPT_CPUS,
		OPT_TIMEOUT_MS,
		OPT_VIRTIO_FS,
		OPT_VIRTIO_VSOCK,
		OPT_HELP
	};
	static const struct option longopts[] = {
		{ "test-guest", required_argument, NULL, OPT_TEST_GUEST },
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		{ "initrd", required_argument, NULL, OPT_INITRD },
		{ "cmdline", required_argument, NULL, OPT_CMDLINE },
		{ "machine", no_argument, NULL, OPT_MACHINE },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS },
		{ "virtio-fs", required_argument, NULL, OPT_VIRTIO_FS },
		{ "virtio-vsock", required_argument, NULL, OPT_VIRTIO_VSOCK },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	char want[96];
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->cpus = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_TEST_GUEST:
			o->test_guest = optarg;
			break;
		case OPT_KERNEL:
			o->kernel = optarg;
			break;
		case OPT_INITRD:
			o->initrd = optarg;
			break;
		case OPT_CMDLINE:
			if (strlen(optarg) > X86_CMDLINE_MAX - 1) {
				snprintf(want, sizeof(want), "at most %d bytes",
					 X86_CMDLINE_MAX - 1);
				return bad_value("--cmdline", "(too long)", want);
			}
			o->cmdline = optarg;
			break;
		case OPT_MACHINE:
			o->machine = true;
			break;
		case OPT_MEM:
			snprintf(want, sizeof(want), "a whole number of MiB, %u..%llu",
				 VMM_MEM_MIB_MIN, (unsigned long long)VMM_MEM_MIB_MAX);
			if (parse_u64(optarg, VMM_MEM_MIB_MIN, VMM_MEM_MIB_MAX, &o->mem_mib))
				return bad_value("--mem", optarg, want);
			break;
		case OPT_CPUS:
			snprintf(want, sizeof(want), "1..%u vCPUs", VM_MAX_VCPUS);
			if (parse_u64(optarg, 1, VM_MAX_VCPUS, &v))
				return bad_value("--cpus", optarg, want);
			o->cpus = (unsigned)v;
			break;
		case OPT_TIMEOUT_MS:
			snprintf(want, sizeof(want), "milliseconds, 0..%llu",
				 (unsigned long long)VMM_TIMEOUT_MS_MAX);
			if (parse_u64(optarg, 0, VMM_TIMEOUT_MS_MAX, &o->timeout_ms))
				return bad_value("--timeout-ms", optarg, want);
			break;
		case OPT_VIRTIO_FS:
			if (split_device(optarg, "tag=", &o->fs_sock, &o->fs_tag) ||
			    strlen(o->fs_tag) > VIRTIO_FS_TAG_MAX)
				return bad_value("--virtio-fs", optarg, "SOCKET,tag=TAG (1..36 bytes)");
			break;
		case OPT_VIRTIO_VSOCK: {
			const char *cid;
			if (split_device(optarg, "cid=", &o->vsock_sock, &cid) ||
			    parse_u64(cid, VIRTIO_VSOCK_CID_MIN, UINT32_MAX - 1, &o->vsock_cid))
				return bad_value("--virtio-vsock", optarg, "SOCKET,cid=N (N >= 3)");
			break;
		}
		case 'h':
		case OPT_HELP:
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr,
				"bulkhead-vmm: unknown or incomplete option %s; see --help\n",
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bulkhead-vmm: unexpected argument %s; see --help\n", argv[optind]);
		return -1;
	}
	if (!o->test_guest == !o->kernel) {
		fprintf(stderr, "bulkhead-vmm: give exactly one of --kernel PATH and --test-guest "
				"FILE; see --help\n");
		return -1;
	}
	if (o->test_guest && !o->machine && (o->initrd || o->cmdline)) {
		fprintf(stderr, "bulkhead-vmm: --initrd and --cmdline need --kernel or --machine; "
				"see --help\n");
		return -1;
	}
	if ((o->fs_sock || o->vsock_sock) && !o->kernel) {
		fprintf(stderr, "bulkhead-vmm: --virtio-fs and --virtio-vsock need --kernel; "
				"see --help\n");
		return -1;
	}
	if (o->kernel && o->machine) {
		fprintf(stderr, "bulkhead-vmm: --machine is for --test-guest; see --help\n");
		return -1;
	}
	o->mode = o->kernel ? VMM_MODE_LINUX : o->machine ? VMM_MODE_MACHINE : VMM_MODE_TEST;
	if (!o->mem_mib)
		o->mem_mib = o->kernel ? VMM_LINUX_MEM_MIB_DEFAULT : VMM_MEM_MIB_DEFAULT;
	return 0;
}

/* --- set-up and run -------------------------------------------------------------------- */

/* Guest images: the kernel or test binary, the zero page, initrd and MP table. Fills the
 * boot registers every vCPU starts from (test mode) or the BSP's (Linux). */
static int load_images(struct machine *m, struct vcpu_boot *b)
{
	const struct vmm_opts *o = m->o;
	struct loader_image kimg = { 0 }, initrd = { 0 };
	struct x86_kernel k;
	char err[256], what[512];
	int rc = 0;

	memset(b, 0, sizeof(*b));
	memset(&k, 0, sizeof(k));
	if (o->mode == VMM_MODE_LINUX) {
		if ((rc = loader_image_map(o->kernel, "kernel", LOADER_IMAGE_MAX, &kimg)))
			return rc;
		rc = x86_kernel_load(&m->vm.mem, kimg.data, kimg.len, &k, err, sizeof(err));
		loader_image_unmap(&kimg);
		if (rc) {
			snprintf(what, sizeof(what), "kernel %s: %s", o->kernel, err);
			vmm_log_setup(what, 0, "use the vmlinux or bzImage that make builds");
			return rc;
		}
		b->entry = k.img.entry;
		b->rsp = X86_BOOT_STACK;
	} else {
		uint64_t size;
		if ((rc = loader_flat_load(&m->vm.mem, o->test_guest, TG_LOAD_GPA, &size)))
			return rc;
		k.img.entry = TG_LOAD_GPA;
		k.img.start = TG_LOAD_GPA;
		k.img.end = TG_LOAD_GPA + size;
		b->entry = TG_LOAD_GPA;
		b->rsp = TG_STACK_TOP;
		b->rdi = TG_ABI_VERSION;
		b->rcx = o->cpus;
	}
	if (o->mode == VMM_MODE_TEST)
		return 0;

	if (o->initrd && (rc = loader_image_map(o->initrd, "initrd", LOADER_IMAGE_MAX, &initrd)))
		return rc;
	rc = x86_boot_params_write(&m->vm.mem, &k, m->cmdline[0] ? m->cmdline : o->cmdline,
				   o->initrd ? &initrd : NULL, err, sizeof(err));
	loader_image_unmap(&initrd);
	if (rc) {
		vmm_log_setup(err, 0, "check --mem, --initrd and --cmdline");
		return rc;
	}
	if ((rc = x86_mptable_write(&m->vm.mem, o->cpus))) {
		vmm_log_setup("cannot write the MP table", -rc, "give the guest more --mem");
		return rc;
	}
	b->rsi = X86_ZEROPAGE_GPA;
	return 0;
}

static int create_vcpus(struct machine *m, const struct vcpu_boot *boot)
{
	const struct vmm_opts *o = m->o;
	int rc;

	for (unsigned i = 0; i < o->cpus; i++) {
		struct vcpu *v = &m->vcpus[i];
		if ((rc = vcpu_create(v, &m->vm, i)))
			return rc;
		m->nvcpus++;
		if ((rc = vcpu_arch_cpuid(v)))
			return rc;
		/* Linux brings its APs up itself with INIT/SIPI; they wait in the kernel. */
		if (o->mode == VMM_MODE_LINUX && i > 0)
			continue;
		struct vcpu_boot b = *boot;
		b.rdx = i;
		if ((rc = vcpu_arch_boot64(v, &b)))
			return rc;
		if (i > 0 && (m->vm.flags & VM_IRQCHIP) && (rc = vcpu_arch_make_runnable(v)))
			return rc;
	}
	return 0;
}

static void report_unknown(const struct vm *vm)
{
	if (vm->pio.unknown_reads || vm->pio.unknown_writes || vm->mmio.unknown_reads ||
	    vm->mmio.unknown_writes)
		vmm_log("unknown accesses: port %llu reads, %llu writes; MMIO %llu reads, %llu "
			"writes",
			(unsigned long long)vm->pio.unknown_reads,
			(unsigned long long)vm->pio.unknown_writes,
			(unsigned long long)vm->mmio.unknown_reads,
			(unsigned long long)vm->mmio.unknown_writes);
}

static int vmm_main(struct machine *m)
{
	const struct vmm_opts *o = m->o;
	struct vcpu_boot boot;
	unsigned ndev = 0;
	int status = VMM_EXIT_SETUP;

	unsigned flags = o->mode == VMM_MODE_TEST ? 0 : VM_IRQCHIP;
	if (vm_create(&m->vm, o->mem_mib << 20, o->cpus, flags))
		return VMM_EXIT_SETUP;
	for (; ndev < VMM_NDEVICES; ndev++) {
		const struct vmm_device *d = &vmm_devices[ndev];
		if ((d->modes & o->mode) && d->init(m))
			goto out;
	}
	if (load_images(m, &boot) || create_vcpus(m, &boot))
		goto out;

	status = vcpu_run_all(m->vcpus, m->nvcpus, o->timeout_ms);
	report_unknown(&m->vm);
out:
	while (ndev-- > 0) {
		const struct vmm_device *d = &vmm_devices[ndev];
		if ((d->modes & o->mode) && d->fini)
			d->fini(m);
	}
	while (m->nvcpus > 0)
		vcpu_destroy(&m->vcpus[--m->nvcpus]);
	vm_destroy(&m->vm);
	return status;
}

int main(int argc, char **argv)
{
	static struct machine m; /* large (buffers, vCPU table): not on the stack */
	struct vmm_opts o;

	m.main_ns = vm_now_ns();
	if (parse_args(argc, argv, &o))
		return VMM_EXIT_SETUP;
	m.o = &o;
	return vmm_main(&m);
}
