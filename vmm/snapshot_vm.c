/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/snapshot_vm.c: a VM saved on SIGUSR1 and started from a snapshot (see snapshot_vm.h). */
#include "vmm/snapshot_vm.h"

#include "lib/mono.h"
#include "lib/vmm_exit.h"
#include "vmm/log.h"
#include "vmm/machine.h"
#include "vmm/options.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define SNAP_SIGNAL SIGUSR1

/* Room for every section: the vCPUs, the VM and the devices' small structs. */
static size_t state_cap(unsigned ncpus)
{
	return ncpus * (sizeof(struct x86_vcpu_state) + sizeof(struct snap_section)) +
	       sizeof(struct x86_vm_state) + 64 * 1024;
}

/* --- saving ------------------------------------------------------------------------------- */

static int save_vcpu(struct vcpu *v, void *arg)
{
	struct machine *m = arg;
	const char *what = "";
	int rc = x86_vcpu_save(v->fd, &m->snap.arch.msrs, m->snap.arch.xsave, &m->snap.arch.vcpu_state[v->id],
			       &what);
	if (rc)
		vmm_log("snapshot: vCPU %u: %s failed: %s", v->id, what, strerror(-rc));
	return rc;
}

/* Gathers every section; 0 or -errno after one line. */
static int gather(struct machine *m)
{
	struct vmm_snapshot *s = &m->snap;
	struct x86_vm_state vm;
	const char *what = "";
	int rc;

	s->out.len = 0;
	s->out.nsections = 0;
	for (unsigned i = 0; i < m->nvcpus; i++) {
		if (m->vcpus[i].pause_rc)
			return m->vcpus[i].pause_rc;
		if ((rc = snap_put(&s->out, SNAP_SEC_VCPU, i, &s->arch.vcpu_state[i],
				   sizeof(s->arch.vcpu_state[i]))))
			return rc;
	}
	if ((rc = x86_vm_save(m->vm.vm_fd, (m->vm.flags & VM_IRQCHIP) != 0, &vm, &what))) {
		vmm_log("snapshot: %s failed: %s", what, strerror(-rc));
		return rc;
	}
	if ((rc = snap_put(&s->out, SNAP_SEC_VM, 0, &vm, sizeof(vm))))
		return rc;
	pthread_mutex_lock(&m->vm.dev_lock);
	for (unsigned i = 0; i < s->ndevs && !rc; i++) {
		const struct vmm_device *d = &s->devs[i];
		if ((d->modes & m->o->mode) && d->save)
			rc = d->save(m, &s->out);
	}
	pthread_mutex_unlock(&m->vm.dev_lock);
	return rc;
}

/* Every vCPU is parked: the VM, its devices and RAM go to the file. */
static int save_all(void *arg)
{
	struct machine *m = arg;
	struct vmm_snapshot *s = &m->snap;
	struct snap_header h = { .arch = SNAP_ARCH_X86_64, .mode = m->o->mode, .ncpus = m->nvcpus };
	char err[160];
	int rc;

	if ((rc = gather(m)) == 0) {
		rc = snap_write(s->fd, &h, &s->out, &m->vm.mem, err, sizeof(err));
		if (rc)
			vmm_log("snapshot: %s", err);
	} else if (rc == -ENOSPC) {
		vmm_log("snapshot: the state does not fit its buffer");
	}
	/* A back end may outlive this process with RAM mapped (a paused session keeps its
	 * virtiofsd): what is saved need not stay in memory. */
	int rel = rc == 0 ? gmem_release(&m->vm.mem) : 0;
	if (rel)
		vmm_log("snapshot: saved, but RAM could not be given back: %s", strerror(-rel));
	if (rc == 0) {
		vmm_log("snapshot: saved %u vCPU(s) and %llu MiB of RAM in use (of %llu)",
			m->nvcpus, (unsigned long long)(h.mem_bytes >> 20),
			(unsigned long long)(h.mem_size >> 20));
		return VMM_EXIT_SNAPSHOT;
	}
	/* No half-written file is left to be mistaken for a snapshot; the devices take back
	 * what the save stopped, and the guest runs on. */
	for (unsigned i = 0; i < s->ndevs; i++)
		if ((s->devs[i].modes & m->o->mode) && s->devs[i].resume)
			s->devs[i].resume(m);
	if (ftruncate(s->fd, 0) < 0)
		vmm_log("snapshot: cannot empty the file after the failure: %s", strerror(errno));
	vmm_log("snapshot: not saved; the guest runs on");
	return -1;
}

void snapshot_block_signal(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SNAP_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int snapshot_setup(struct machine *m, const struct vmm_device *devs, unsigned ndevs,
		   const struct vcpu_pause **pz)
{
	struct vmm_snapshot *s = &m->snap;
	sigset_t set;
	int rc;

	*pz = NULL;
	s->fd = m->o->snapshot_fd;
	s->sig_fd = -1;
	s->devs = devs;
	s->ndevs = ndevs;
	if (s->fd < 0)
		return 0;
	int fl = fcntl(s->fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY || (fl & O_APPEND)) {
		vmm_log_setup("--snapshot-fd is not open for writing (or is in append mode)", 0,
			      "open it read-write, e.g. N<>FILE");
		return -EBADF;
	}
	if ((rc = x86_snap_msr_list(m->vm.kvm_fd, &s->arch.msrs)))
		return rc;
	s->arch.xsave = x86_snap_has_xsave(m->vm.kvm_fd);
	s->arch.vcpu_state = calloc(m->o->cpus, sizeof(*s->arch.vcpu_state));
	if (!s->arch.vcpu_state || snap_out_init(&s->out, state_cap(m->o->cpus))) {
		vmm_log_setup("cannot allocate the snapshot's buffers", ENOMEM, NULL);
		return -ENOMEM;
	}
	/* No file this process writes may grow past what a save of this VM can need (its RAM, the
	 * state, headers): a VMM taken over by its guest cannot fill the disk through the file
	 * it holds. Past that a write fails (EFBIG, SIGXFSZ ignored) and the save with it. */
	uint64_t most = m->vm.mem.size + state_cap(m->o->cpus) + (16ull << 20);
	struct rlimit fsize = { .rlim_cur = most, .rlim_max = most };
	if (setrlimit(RLIMIT_FSIZE, &fsize) < 0 || signal(SIGXFSZ, SIG_IGN) == SIG_ERR) {
		vmm_log_setup("cannot limit the snapshot's size (RLIMIT_FSIZE)", errno, NULL);
		return -errno;
	}
	/* Blocked in every thread (the ones made later inherit it), read on the main one. */
	sigemptyset(&set);
	sigaddset(&set, SNAP_SIGNAL);
	if ((rc = pthread_sigmask(SIG_BLOCK, &set, NULL)) ||
	    (s->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		rc = rc ? rc : errno;
		vmm_log_setup("cannot set up SIGUSR1 for snapshots", rc, NULL);
		return -rc;
	}
	s->pause = (struct vcpu_pause){
		.fd = s->sig_fd, .on_vcpu = save_vcpu, .on_all = save_all, .arg = m
	};
	*pz = &s->pause;
	return 0;
}

void snapshot_fini(struct machine *m)
{
	struct vmm_snapshot *s = &m->snap;
	if (s->sig_fd >= 0)
		close(s->sig_fd);
	s->sig_fd = -1;
	free(s->arch.vcpu_state);
	s->arch.vcpu_state = NULL;
	snap_out_free(&s->out);
}

/* --- restoring ---------------------------------------------------------------------------- */

/* Every section known, of its exact size and a valid index, the device states ones their
 * devices could be in, and none missing: all found before the VM exists. 0 or -EBADMSG with
 * err said. */
static int check_contents(const struct snap_in *in, char *err, size_t errlen)
{
	const struct snap_header *h = &in->hdr;
	bool machine = h->mode != VMM_MODE_TEST; /* the UART, i8042, irqchip and virtio */
	uint32_t vcpus = 0, vm = 0, uart = 0, i8042 = 0;
	struct snap_section sec;
	uint64_t at = 0;
	const void *p;

	while ((p = snap_next(in, &at, &sec))) {
		bool ok = false;
		switch (sec.type) {
		case SNAP_SEC_VM: {
			const struct x86_vm_state *v = p;
			ok = sec.index == 0 && sec.len == sizeof(*v) && v->irqchip == machine &&
			     !v->pad;
			vm++;
			break;
		}
		case SNAP_SEC_VCPU: {
			const struct x86_vcpu_state *v = p;
			ok = sec.index < h->ncpus && sec.len == sizeof(*v) &&
			     v->cpuid.head.nent <= X86_SNAP_CPUID_MAX &&
			     v->nmsrs <= X86_SNAP_MSRS_MAX;
			vcpus++;
			break;
		}
		case SNAP_SEC_UART:
			ok = machine && sec.index == 0 && sec.len == sizeof(struct uart_state) &&
			     uart_state_check(p) == 0;
			uart++;
			break;
		case SNAP_SEC_I8042:
			ok = machine && sec.index == 0 && sec.len == sizeof(struct i8042_state) &&
			     i8042_state_check(p) == 0;
			i8042++;
			break;
		case SNAP_SEC_VIRTIO:
			ok = machine && sec.index < VIRTIO_DEVS_MAX &&
			     sec.len == sizeof(struct vhost_user_dev_state);
			break;
		}
		if (!ok) {
			snprintf(err, errlen,
				 "its section of type %u (index %u, %u bytes) is unknown "
				 "or malformed",
				 sec.type, sec.index, sec.len);
			return -EBADMSG;
		}
	}
	/* Sections are unique per (type, index) (snap_open), so counts are coverage. */
	if (vm != 1 || vcpus != h->ncpus || uart != machine || i8042 != machine) {
		snprintf(err, errlen,
			 "sections are missing (VM %u, vCPUs %u of %u, UART %u, i8042 %u)", vm,
			 vcpus, h->ncpus, uart, i8042);
		return -EBADMSG;
	}
	return 0;
}

int snapshot_restore_open(struct vmm_opts *o, struct snap_in *in)
{
	char err[200], what[260];
	int rc = snap_open(o->restore_fd, in, err, sizeof(err));

	if (rc) {
		snprintf(what, sizeof(what), "--restore-fd %d: %s", o->restore_fd, err);
		vmm_log_setup(what, 0, "nothing was started");
		return rc;
	}
	const struct snap_header *h = &in->hdr;
	rc = -EINVAL;
	if (h->mode != VMM_MODE_TEST && h->mode != VMM_MODE_MACHINE && h->mode != VMM_MODE_LINUX)
		snprintf(err, sizeof(err), "the snapshot's mode (%u) is unknown", h->mode);
	else if (h->ncpus < 1 || h->ncpus > VM_MAX_VCPUS)
		snprintf(err, sizeof(err), "the snapshot has %u vCPUs (1..%u)", h->ncpus,
			 VM_MAX_VCPUS);
	else if (h->mem_size > VMM_MEM_MIB_MAX << 20 || h->mem_size < VMM_MEM_MIB_MIN << 20 ||
		 h->mem_size % (1 << 20))
		snprintf(err, sizeof(err), "the snapshot's RAM (%llu bytes) is out of range",
			 (unsigned long long)h->mem_size);
	else if (o->mem_mib && o->mem_mib << 20 != h->mem_size)
		snprintf(err, sizeof(err), "the snapshot has %llu MiB of RAM, --mem says %llu",
			 (unsigned long long)(h->mem_size >> 20), (unsigned long long)o->mem_mib);
	else if (o->cpus && o->cpus != h->ncpus)
		snprintf(err, sizeof(err), "the snapshot has %u vCPU(s), --cpus says %u", h->ncpus,
			 o->cpus);
	else
		rc = check_contents(in, err, sizeof(err));
	if (rc) {
		snprintf(what, sizeof(what), "--restore-fd %d: %s", o->restore_fd, err);
		vmm_log_setup(what, 0, "nothing was started");
		snap_close(in);
		return rc;
	}
	o->mode = h->mode;
	o->mem_mib = h->mem_size >> 20;
	o->cpus = h->ncpus;
	return 0;
}

/* One line; rc < 0 adds its errno's words (what names a call), 0 adds none. */
static int restore_fail(const char *what, int rc)
{
	char line[240];
	snprintf(line, sizeof(line), "--restore-fd: %s", what);
	vmm_log_setup(line, rc < 0 ? -rc : 0, "nothing was started");
	return rc < 0 ? rc : -EINVAL;
}

const void *snapshot_section(const struct snap_in *in, uint32_t type, uint32_t len,
			     const char *what)
{
	char line[160];
	uint32_t have;
	const void *p = snap_find(in, type, 0, &have);
	if (p && have == len)
		return p;
	snprintf(line, sizeof(line), "%s's state is missing or malformed", what);
	restore_fail(line, 0);
	return NULL;
}

static int restore_vcpus(struct machine *m, struct snap_in *in)
{
	const char *what = "";
	char line[160];
	uint32_t len;
	int rc;

	for (unsigned i = 0; i < m->o->cpus; i++) {
		const struct x86_vcpu_state *st = snap_find(in, SNAP_SEC_VCPU, i, &len);
		if (!st || len != sizeof(*st) || st->cpuid.head.nent > X86_SNAP_CPUID_MAX) {
			snprintf(line, sizeof(line), "vCPU %u's state is missing or malformed", i);
			return restore_fail(line, -EBADMSG);
		}
		struct vcpu *v = &m->vcpus[i];
		if ((rc = vcpu_create(v, &m->vm, i)))
			return rc;
		m->nvcpus++;
		if ((rc = vcpu_arch_cpuid_restore(v, &st->cpuid.head)))
			return rc;
		if ((rc = x86_vcpu_restore(v->fd, st, &what))) {
			snprintf(line, sizeof(line), "vCPU %u: %s failed", i, what);
			return restore_fail(line, rc);
		}
	}
	return 0;
}

int snapshot_restore(struct machine *m, const struct vmm_device *devs, unsigned ndevs,
		     struct snap_in *in)
{
	const char *what = "";
	char err[200];
	int rc;

	uint64_t t0 = mono_ns();
	if ((rc = snap_load_mem(m->o->restore_fd, in, &m->vm.mem, err, sizeof(err)))) {
		restore_fail(err, 0); /* err already says why */
		return rc;
	}
	uint64_t t1 = mono_ns();
	/* Its size, and an irqchip that matches the mode, were checked at open. */
	const struct x86_vm_state *vm = snapshot_section(in, SNAP_SEC_VM, sizeof(*vm), "the VM");
	if (!vm)
		return -EBADMSG;
	if ((rc = x86_vm_restore(m->vm.vm_fd, vm, &what)))
		return restore_fail(what, rc);
	if ((rc = restore_vcpus(m, in)))
		return rc;
	for (unsigned i = 0; i < ndevs; i++)
		if ((devs[i].modes & m->o->mode) && devs[i].restore &&
		    (rc = devs[i].restore(m, in)))
			return rc;
	/* What a restore costs, for the bench (bench/nested-snapshot.sh) and the curious. */
	vmm_log("restore: %.1f MiB of RAM read and checked in %.1f ms; vCPUs and devices set in "
		"%.1f ms (%.1f ms since start)",
		(double)in->hdr.mem_bytes / (1 << 20), (double)(t1 - t0) / 1e6,
		(double)(mono_ns() - t1) / 1e6, (double)(mono_ns() - m->main_ns) / 1e6);
	return 0;
}
