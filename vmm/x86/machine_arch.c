/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/machine_arch.c: the x86 machine (vmm/machine_arch.h) — COM1 and the i8042 on
 * ports, the boot timer's port, virtio-mmio in the hole below 4 GiB, and the boot: a bzImage
 * or vmlinux with its zero page and MP table, or a flat test guest, and the vCPUs in 64-bit
 * mode. */
#include "vmm/machine_arch.h"

#include "lib/test_guest_abi.h"
#include "lib/vmm_exit.h"
#include "vmm/loader.h"
#include "vmm/loader_flat.h"
#include "vmm/log.h"
#include "vmm/snapshot_vm.h"
#include "vmm/x86/layout.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Static_assert(X86_CMDLINE_MAX == VMM_CMDLINE_MAX, "the command line's limit is x86's");
_Static_assert(VMM_MEM_MIB_MAX <= X86_RAM_MAX_BELOW_4G >> 20, "RAM ends below the MMIO hole");

static int dev_i8042_save(struct machine *m, struct snap_out *out)
{
	struct i8042_state st;
	i8042_save(&m->arch.i8042, &st);
	return snap_put(out, SNAP_SEC_I8042, 0, &st, sizeof(st));
}

static int dev_i8042_restore(struct machine *m, const struct snap_in *in)
{
	const struct i8042_state *st =
		snapshot_section(in, SNAP_SEC_I8042, sizeof(*st), "the i8042");
	return st ? i8042_restore(&m->arch.i8042, st) : -EBADMSG;
}

static int dev_i8042_init(struct machine *m)
{
	/* A Linux session ends by rebooting (reboot=k): that is its clean exit. */
	return i8042_init(&m->arch.i8042, &m->vm,
			  m->o->mode == VMM_MODE_LINUX ? VMM_EXIT_OK : VMM_EXIT_RESET);
}

static int dev_boot_timer_init(struct machine *m)
{
	return boot_timer_init(&m->boot_timer, &m->vm, m->main_ns);
}

const struct vmm_device machine_arch_devices[] = {
	{ "i8042", VMM_MODE_MACHINE | VMM_MODE_LINUX, dev_i8042_init, NULL, dev_i8042_save,
	  dev_i8042_restore, NULL },
	{ "boot timer", VMM_MODE_MACHINE | VMM_MODE_LINUX, dev_boot_timer_init, NULL, NULL, NULL,
	  NULL },
};
const unsigned machine_arch_ndevices =
	sizeof(machine_arch_devices) / sizeof(machine_arch_devices[0]);

const struct machine_arch_virtio machine_arch_virtio = {
	.base = X86_VIRTIO_MMIO_GPA,
	.max = X86_VIRTIO_MMIO_MAX,
	.gsi_base = X86_VIRTIO_GSI_BASE,
	.on_cmdline = true,
};

unsigned machine_arch_vm_flags(const struct vmm_opts *o)
{
	return o->mode == VMM_MODE_TEST ? 0 : VM_IRQCHIP;
}

int machine_arch_uart_init(struct machine *m)
{
	return uart_init(&m->uart, &m->vm, &m->vm.pio, X86_UART_PORT, X86_UART_GSI, STDOUT_FILENO);
}

/* Guest images: the kernel or test binary, the zero page, initrd and MP table. Fills the
 * boot registers every vCPU starts from (test mode) or the BSP's (Linux). */
static int load_images(struct machine *m, struct vcpu_boot *b)
{
	const struct vmm_opts *o = m->o;
	struct loader_image kimg = { 0 }, initrd = { 0 };
	struct x86_kernel k;
	char err[256], what[512], name[32];
	int rc = 0;

	memset(b, 0, sizeof(*b));
	memset(&k, 0, sizeof(k));
	if (o->mode == VMM_MODE_LINUX) {
		if ((rc = loader_image_map(&o->kernel, "kernel", LOADER_IMAGE_MAX, &kimg)))
			return rc;
		rc = x86_kernel_load(&m->vm.mem, kimg.data, kimg.len, &k, err, sizeof(err));
		loader_image_unmap(&kimg);
		if (rc) {
			snprintf(what, sizeof(what), "kernel %s: %s",
				 loader_src_name(&o->kernel, name, sizeof(name)), err);
			vmm_log_setup(what, 0, "use the vmlinux or bzImage that make builds");
			return rc;
		}
		b->entry = k.img.entry;
		b->rsp = X86_BOOT_STACK;
	} else {
		uint64_t size;
		if ((rc = loader_flat_load(&m->vm.mem, &o->test_guest, TG_LOAD_GPA, &size)))
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

	bool with_initrd = o->initrd.path || o->initrd.fd >= 0;
	if (with_initrd && (rc = loader_image_map(&o->initrd, "initrd", LOADER_IMAGE_MAX, &initrd)))
		return rc;
	rc = x86_boot_params_write(&m->vm.mem, &k, m->cmdline[0] ? m->cmdline : o->cmdline,
				   with_initrd ? &initrd : NULL, err, sizeof(err));
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

/* The images are in guest RAM: their descriptors have no further use. */
static void close_image_fds(const struct vmm_opts *o)
{
	const int fds[] = { o->test_guest.fd, o->kernel.fd, o->initrd.fd };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int machine_arch_boot(struct machine *m)
{
	struct vcpu_boot boot;
	int rc = load_images(m, &boot);
	close_image_fds(m->o);
	return rc ? rc : create_vcpus(m, &boot);
}
