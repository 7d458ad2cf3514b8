/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/vm.c: VM lifetime — acquire in order, release in reverse. */
#include "vmm/vm.h"

#include "lib/mono.h"
#include "vmm/log.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

int vm_create(struct vm *vm, uint64_t mem_bytes, unsigned ncpus, unsigned flags)
{
	return vm_create_on(vm, -1, mem_bytes, ncpus, flags);
}

/* The state every VM starts from, KVM or not. */
static void vm_init_common(struct vm *vm, int kvm_fd, unsigned ncpus, unsigned flags)
{
	memset(vm, 0, sizeof(*vm));
	vm->vm_fd = -1;
	vm_stop_clear(&vm->stop);
	vm->kvm_fd = kvm_fd; /* ours from here on, closed on failure */
	vm->mem.fd = -1;
	vm->flags = flags;
	vm->ncpus = ncpus;
	pthread_mutex_init(&vm->dev_lock, NULL);
	vm->created_ns = mono_ns();
	bus_init(&vm->pio, "port");
	bus_init(&vm->mmio, "MMIO");
}

int vm_create_nokvm(struct vm *vm, uint64_t mem_bytes)
{
	int err;

	vm_init_common(vm, -1, 1, 0);
	err = vm_stop_open(&vm->stop);
	if (!err)
		err = gmem_init(&vm->mem, mem_bytes);
	if (!err)
		err = gmem_add_region(&vm->mem, 0, 0, mem_bytes);
	if (err)
		vm_destroy(vm);
	return err;
}

int vm_create_on(struct vm *vm, int kvm_fd, uint64_t mem_bytes, unsigned ncpus, unsigned flags)
{
	int err;

	vm_init_common(vm, kvm_fd, ncpus, flags);
	err = -vm_stop_open(&vm->stop);
	if (err) {
		vmm_log_setup("cannot create an eventfd", err, "raise the open-file limit");
		goto fail;
	}
	if (kvm_fd >= 0 && fcntl(kvm_fd, F_SETFD, FD_CLOEXEC) < 0) {
		err = errno;
		vmm_log_setup("cannot set FD_CLOEXEC on the --kvm-fd descriptor", err, NULL);
		goto fail;
	}
	if (kvm_fd < 0)
		vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		err = errno;
		vmm_log_setup("cannot open /dev/kvm", err,
			      err == ENOENT
				      ? "load kvm_intel or kvm_amd (or run with the qemu engine)"
				      : "check its permissions (group kvm) or run as root");
		goto fail;
	}
	int api = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (api != KVM_API_VERSION) {
		err = api < 0 ? errno : EPROTO;
		vmm_log_setup("KVM_GET_API_VERSION did not return 12", err,
			      "this kernel's KVM is not supported");
		goto fail;
	}
	int sz = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (sz < (int)sizeof(struct kvm_run)) {
		err = sz < 0 ? errno : EPROTO;
		vmm_log_setup("KVM_GET_VCPU_MMAP_SIZE failed", err,
			      "this kernel's KVM is not supported");
		goto fail;
	}
	vm->vcpu_mmap_size = (size_t)sz;

	do {
		vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	} while (vm->vm_fd < 0 && errno == EINTR);
	if (vm->vm_fd < 0) {
		err = errno;
		vmm_log_setup("KVM_CREATE_VM failed", err,
			      "is another hypervisor holding VT-x/AMD-V, or memory short?");
		goto fail;
	}
	/* KVM hands out its fds without O_CLOEXEC on older kernels; set it ourselves so no fd
	 * leaks into a helper we exec later. */
	if (fcntl(vm->vm_fd, F_SETFD, FD_CLOEXEC) < 0) {
		err = errno;
		vmm_log_setup("cannot set FD_CLOEXEC on the VM fd", err, NULL);
		goto fail_vm;
	}

	err = -vm_arch_init(vm);
	if (err)
		goto fail_vm;

	err = -gmem_init(&vm->mem, mem_bytes);
	if (err) {
		vmm_log_setup("cannot create guest RAM (memfd)", err, "try a smaller --mem");
		goto fail_vm;
	}
	err = -gmem_add_region(&vm->mem, vm_arch_ram_gpa(), 0, mem_bytes);
	if (!err)
		err = -gmem_register(&vm->mem, vm->vm_fd);
	if (err) {
		vmm_log_setup("KVM_SET_USER_MEMORY_REGION failed", err, "try a smaller --mem");
		goto fail_mem;
	}
	return 0;

fail_mem:
	gmem_destroy(&vm->mem);
fail_vm:
	close(vm->vm_fd);
	vm->vm_fd = -1;
fail:
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	vm_stop_close(&vm->stop);
	vm->kvm_fd = -1;
	pthread_mutex_destroy(&vm->dev_lock);
	return -err;
}

void vm_destroy(struct vm *vm)
{
	gmem_destroy(&vm->mem);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	vm_stop_close(&vm->stop);
	vm->vm_fd = vm->kvm_fd = -1;
	pthread_mutex_destroy(&vm->dev_lock);
}

int vm_irq_line(struct vm *vm, unsigned gsi, bool level)
{
	struct kvm_irq_level irq = { .irq = vm_arch_irq_line(gsi), .level = level ? 1 : 0 };
	if (!(vm->flags & VM_IRQCHIP))
		return -ENODEV;
	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq) < 0)
		return -errno;
	return 0;
}
