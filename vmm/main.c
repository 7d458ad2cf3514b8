/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vmm/main.c: bulkhead-vmm — options (vmm/options.c), then acquire in order (VM, devices,
 * images, vCPUs), lock down (one place: lock_down_and_run), run, release in reverse.
 * Devices are declared in common_devices[] below and the architecture's own in
 * machine_arch_devices[] (vmm/machine_arch.h), not called from here: to add one, give it an
 * init/fini pair and a row (see vmm/machine.h and vmm/README.md).
 */
#include "lib/jail_selftest.h"
#include "lib/mono.h"
#include "lib/stdfds.h"
#include "lib/test_guest_abi.h"
#include "lib/vmm_exit.h"
#include "vmm/loader.h"
#include "vmm/loader_flat.h"
#include "vmm/log.h"
#include "vmm/machine.h"
#include "vmm/machine_arch.h"
#include "vmm/snapshot_vm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
	return machine_arch_uart_init(m);
}

static void dev_uart_fini(struct machine *m)
{
	uart_flush(&m->uart);
}

static int dev_uart_save(struct machine *m, struct snap_out *out)
{
	struct uart_state st;
	uart_save(&m->uart, &st);
	return snap_put(out, SNAP_SEC_UART, 0, &st, sizeof(st));
}

static int dev_uart_restore(struct machine *m, const struct snap_in *in)
{
	const struct uart_state *st = snapshot_section(in, SNAP_SEC_UART, sizeof(*st), "the UART");
	return st ? uart_restore(&m->uart, st) : -EBADMSG; /* its contents checked at open */
}

/* The vhost-user devices: connected, negotiated and given guest RAM here, before
 * any vCPU exists; announced to the kernel on its command line. */
static int dev_virtio_init(struct machine *m)
{
	const struct vmm_opts *o = m->o;
	const struct machine_arch_virtio *at = &machine_arch_virtio;
	virtio_devs_init(&m->virtio, &m->vm, at->base, at->max, at->gsi_base);
	struct vhost_user_dev_cfg cfgs[VMM_FS_MAX + 1];
	size_t ncfg = 0;
	for (unsigned i = 0; i < o->nfs; i++)
		cfgs[ncfg++] = (struct vhost_user_dev_cfg){ .type = VHOST_USER_DEV_FS,
							    .socket_path = o->fs[i].sock,
							    .socket_fd = o->fs[i].fd,
							    .name = "virtiofsd",
							    .fs_tag = o->fs[i].tag };
	cfgs[ncfg++] = (struct vhost_user_dev_cfg){ .type = VHOST_USER_DEV_VSOCK,
						    .socket_path = o->vsock_sock,
						    .socket_fd = o->vsock_fd,
						    .name = "bulkhead-vsock",
						    .vsock_cid = o->vsock_cid };
	int rc;
	for (size_t i = 0; i < ncfg; i++)
		if ((cfgs[i].socket_path || cfgs[i].socket_fd >= 0) &&
		    (rc = virtio_vhost_user_add(&m->virtio, &cfgs[i])))
			return rc;
	int n = snprintf(m->cmdline, sizeof(m->cmdline), "%s", o->cmdline ? o->cmdline : "");
	if (m->virtio.n && at->on_cmdline) {
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
	return 0; /* the back ends' watcher starts at lock-down */
}

static void dev_virtio_fini(struct machine *m)
{
	virtio_devs_destroy(&m->virtio);
}

/* Each device's transport and where its rings stood; the back ends' rings are stopped
 * (GET_VRING_BASE) and, if the save then fails, started again (dev_virtio_resume). */
static int dev_virtio_save(struct machine *m, struct snap_out *out)
{
	struct vhost_user_dev_state st;
	int rc = 0;
	for (unsigned i = 0; i < m->virtio.n && !rc; i++)
		if (!(rc = virtio_devs_save(&m->virtio, i, &st)))
			rc = snap_put(out, SNAP_SEC_VIRTIO, i, &st, sizeof(st));
	return rc;
}

static void dev_virtio_resume(struct machine *m)
{
	if (virtio_devs_resume(&m->virtio))
		vmm_log("snapshot: a back end did not take its rings back; stopping");
}

/* The snapshot's devices are the ones given now, in the same order (each checked). */
static int dev_virtio_restore(struct machine *m, const struct snap_in *in)
{
	uint32_t len;
	for (unsigned i = 0; i < VIRTIO_DEVS_MAX; i++) {
		const struct vhost_user_dev_state *st = snap_find(in, SNAP_SEC_VIRTIO, i, &len);
		if (!st && i >= m->virtio.n)
			return 0;
		if (!st || i >= m->virtio.n || len != sizeof(*st)) {
			vmm_log_setup(
				"--restore-fd: the virtio devices given are not the snapshot's", 0,
				"give the --virtio-fs and --virtio-vsock the saved VM had");
			return -EINVAL;
		}
		int rc = virtio_devs_restore(&m->virtio, i, st);
		if (rc)
			return rc;
	}
	return 0;
}

static const struct vmm_device common_devices[] = {
	{ "test ports", VMM_MODE_TEST | VMM_MODE_MACHINE, dev_testdev_init, dev_testdev_fini, NULL,
	  NULL, NULL },
	{ "8250 UART", VMM_MODE_MACHINE | VMM_MODE_LINUX, dev_uart_init, dev_uart_fini,
	  dev_uart_save, dev_uart_restore, NULL },
	{ "virtio (vhost-user)", VMM_MODE_MACHINE | VMM_MODE_LINUX, dev_virtio_init,
	  dev_virtio_fini, dev_virtio_save, dev_virtio_restore, dev_virtio_resume },
	/* virtio-mmio devices (vmm/virtio/) go here, VMM_MODE_LINUX; the architecture's own
	 * devices (machine_arch_devices) come before these. */
};
#define COMMON_NDEVICES (sizeof(common_devices) / sizeof(common_devices[0]))
#define VMM_DEVICES_MAX 16

/* The whole table: the architecture's rows first (arm64's GIC must exist before a virtio
 * device can be given its interrupt), then the common ones. */
static unsigned devices_table(struct vmm_device *t)
{
	unsigned n = 0;
	for (unsigned i = 0; i < machine_arch_ndevices && n < VMM_DEVICES_MAX; i++)
		t[n++] = machine_arch_devices[i];
	for (unsigned i = 0; i < COMMON_NDEVICES && n < VMM_DEVICES_MAX; i++)
		t[n++] = common_devices[i];
	return n;
}

/* --- set-up and run -------------------------------------------------------------------- */

/* --- lock-down ------------------------------------------------------------------------------
 * Everything is acquired: from here no thread opens anything. Each thread installs its own
 * allow-list (vmm/seccomp.c): the back-end watcher as it starts, each vCPU thread before its
 * first KVM_RUN, the main thread last, while the vCPUs wait at vcpu_run_all's gate; so no
 * guest instruction runs before every list is in place. --jail-selftest reports before and
 * probes after each list. */

static int lockdown_failed(const char *what, int err)
{
	vmm_log_setup(what, -err, "does this kernel have seccomp? (--no-seccomp to debug)");
	return err;
}

static int lockdown_watcher(void *arg)
{
	struct machine *m = arg;
	int err = m->o->no_seccomp ? 0 : vmm_seccomp_install(&m->jail.watcher);
	if (err)
		return lockdown_failed("cannot install the back-end watcher's seccomp filter", err);
	if (m->o->jail_selftest)
		vmm_seccomp_thread_probe("watcher");
	return 0;
}

static int lockdown_vcpu(struct vcpu *v, void *arg)
{
	struct machine *m = arg;
	char who[32];
	int err = m->o->no_seccomp ? 0 : vmm_seccomp_install(&m->jail.vcpu[v->id]);
	if (err)
		return lockdown_failed("cannot install a vCPU thread's seccomp filter", err);
	if (m->o->jail_selftest) {
		snprintf(who, sizeof(who), "vcpu %u", v->id);
		vmm_seccomp_thread_probe(who);
	}
	return 0;
}

static int lockdown_main(void *arg)
{
	struct machine *m = arg;
	int err = m->o->no_seccomp ? 0 : vmm_seccomp_install(&m->jail.main);
	if (err)
		return lockdown_failed("cannot install the main thread's seccomp filter", err);
	if (!m->o->jail_selftest)
		return 0;
	jail_selftest_probe(); /* ends in a call off the list: SIGSYS, before any guest code */
	vmm_log("--jail-selftest: a call off the allow-list did not kill the process; stopping");
	return -EPERM;
}

static int lock_down_and_run(struct machine *m, const struct vcpu_pause *pz)
{
	const struct vcpu_lockdown lk = { lockdown_vcpu, lockdown_main, m };
	struct vmm_jail *j = &m->jail;
	int status = VMM_EXIT_SETUP, err;

	*j = (struct vmm_jail){ .vm_fd = m->vm.vm_fd,
				.irqchip = (m->vm.flags & VM_IRQCHIP) != 0,
				.snapshot_fd = m->snap.fd,
				.snapshot_sig_fd = m->snap.sig_fd,
				.mem_fd = m->vm.mem.fd };
	for (unsigned i = 0; i < m->virtio.n; i++)
		j->socks[j->nsocks++] = virtio_devs_socket(&m->virtio, i);
	for (unsigned i = 0; i < m->nvcpus; i++)
		j->vcpu_fds[j->nvcpus++] = m->vcpus[i].fd;
	/* Compiled here, still free to allocate; the threads only install them. */
	if (!m->o->no_seccomp && (err = vmm_seccomp_build(j))) {
		lockdown_failed("cannot build the seccomp filters", err);
		goto out;
	}
	if (m->o->jail_selftest)
		jail_selftest_report();
	if (m->virtio.n) {
		m->virtio.watcher_start = lockdown_watcher;
		m->virtio.watcher_start_arg = m;
		if (virtio_devs_watch(&m->virtio, NULL, NULL))
			goto out;
	}
	status = vcpu_run_all(m->vcpus, m->nvcpus, m->o->timeout_ms, &lk, pz);
out:
	vmm_seccomp_free(j);
	return status;
}

static void report_unknown(const struct vm *vm)
{
	if (vm->pio.unknown_reads || vm->pio.unknown_writes || vm->mmio.unknown_reads ||
	    vm->mmio.unknown_writes)
		/* A note, not a reason: a launcher explaining an end looks past it. */
		vmm_log("note: unknown accesses: port %llu reads, %llu writes; MMIO %llu reads, "
			"%llu writes",
			(unsigned long long)vm->pio.unknown_reads,
			(unsigned long long)vm->pio.unknown_writes,
			(unsigned long long)vm->mmio.unknown_reads,
			(unsigned long long)vm->mmio.unknown_writes);
}

static int vmm_main(struct machine *m, struct snap_in *restore)
{
	const struct vmm_opts *o = m->o;
	const struct vcpu_pause *pz = NULL;
	static struct vmm_device devs[VMM_DEVICES_MAX]; /* the snapshot keeps a pointer */
	unsigned ndev = 0, ndevs = devices_table(devs);
	int status = VMM_EXIT_SETUP, rc;

	if (vm_create_on(&m->vm, o->kvm_fd, o->mem_mib << 20, o->cpus,
			 machine_arch_vm_flags(o)))
		return VMM_EXIT_SETUP;
	vmm_log_bind(&m->vm.stop); /* no message may hold up the VM's stop */
	for (; ndev < ndevs; ndev++) {
		const struct vmm_device *d = &devs[ndev];
		if ((d->modes & o->mode) && d->init(m))
			goto out;
	}
	if (restore) {
		rc = snapshot_restore(m, devs, ndevs, restore);
		snap_close(restore);
		close(o->restore_fd);
		if (rc)
			goto out;
	} else {
		if (machine_arch_boot(m))
			goto out;
	}
	if (snapshot_setup(m, devs, ndevs, &pz))
		goto out;

	status = lock_down_and_run(m, pz);
	report_unknown(&m->vm);
out:
	while (ndev-- > 0) {
		const struct vmm_device *d = &devs[ndev];
		if ((d->modes & o->mode) && d->fini)
			d->fini(m);
	}
	while (m->nvcpus > 0)
		vcpu_destroy(&m->vcpus[--m->nvcpus]);
	snapshot_fini(m);
	vmm_log_bind(NULL);
	vm_destroy(&m->vm);
	return status;
}

int main(int argc, char **argv)
{
	static struct machine m; /* large (buffers, vCPU table): not on the stack */
	struct vmm_opts o;
	struct snap_in in;

	m.main_ns = mono_ns();
	m.snap.fd = m.snap.sig_fd = -1;
	/* Before any descriptor is made: a closed stdout would hand its number to an eventfd,
	 * and the guest's console would be written into it (lib/stdfds.h). */
	if (stdfds_ensure() < 0) {
		fprintf(stderr, "bulkhead-vmm: descriptor 0, 1 or 2 is closed and /dev/null cannot "
				"take its place\n");
		return VMM_EXIT_SETUP;
	}
	if (vmm_options_parse(argc, argv, &o))
		return VMM_EXIT_SETUP;
	/* A snapshot asked for early must wait, not kill us (SIGUSR1's default): blocked now,
	 * read from its signalfd once the VM runs (vmm/snapshot_vm.c). */
	if (o.snapshot_fd >= 0)
		snapshot_block_signal();
	/* A snapshot decides the mode, RAM and vCPUs: read and checked before anything exists. */
	if (o.restore_fd >= 0 && snapshot_restore_open(&o, &in))
		return VMM_EXIT_SETUP;
	m.o = &o;
	return vmm_main(&m, o.restore_fd >= 0 ? &in : NULL);
}
