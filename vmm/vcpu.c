/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/vcpu.c: vCPU lifetime and the run loop — each KVM exit becomes a bus access, or ends
 * the run with a documented status (lib/vmm_exit.h) and one line on stderr. */
#include "vmm/vcpu.h"

#include "lib/mono.h"
#include "lib/vmm_exit.h"
#include "vmm/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

/* The kick's handler has no state, so sharing it between VMs is harmless. */
static void vcpu_kick_handler(int sig)
{
	(void)sig;
}

int vcpu_create(struct vcpu *vcpu, struct vm *vm, unsigned id)
{
	int err;

	memset(vcpu, 0, sizeof(*vcpu));
	vcpu->vm = vm;
	vcpu->id = id;
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)id);
	if (vcpu->fd < 0) {
		err = errno;
		vmm_log_setup("KVM_CREATE_VCPU failed", err, "check the host's KVM vCPU limit");
		return -err;
	}
	if (fcntl(vcpu->fd, F_SETFD, FD_CLOEXEC) < 0) {
		err = errno;
		vmm_log_setup("cannot set FD_CLOEXEC on the vCPU fd", err, NULL);
		goto fail_fd;
	}
	void *run = mmap(NULL, vm->vcpu_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd, 0);
	if (run == MAP_FAILED) {
		err = errno;
		vmm_log_setup("cannot map the vCPU's kvm_run page", err, NULL);
		goto fail_fd;
	}
	vcpu->run = run;
	return 0;

fail_fd:
	close(vcpu->fd);
	vcpu->fd = -1;
	return -err;
}

void vcpu_destroy(struct vcpu *vcpu)
{
	if (vcpu->run)
		munmap(vcpu->run, vcpu->vm->vcpu_mmap_size);
	if (vcpu->fd >= 0)
		close(vcpu->fd);
	vcpu->run = NULL;
	vcpu->fd = -1;
}

static void vcpu_exit_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	unsigned size = run->io.size;
	uint64_t total = (uint64_t)run->io.count * size;

	/* data_offset and count come from the kernel, but check them against the mapping
	 * anyway: a bad value must not walk us off the kvm_run page. */
	if (size == 0 || size > 4 || run->io.data_offset > vcpu->vm->vcpu_mmap_size ||
	    total > vcpu->vm->vcpu_mmap_size - run->io.data_offset) {
		vmm_log("port I/O exit with a bad layout (size %u, count %u)", size, run->io.count);
		vm_request_stop(vcpu->vm, VMM_EXIT_UNEXPECTED);
		return;
	}
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	/* Devices run under the VM's device lock: they need no locking of their own. */
	pthread_mutex_lock(&vcpu->vm->dev_lock);
	for (uint32_t i = 0; i < run->io.count; i++)
		bus_access(&vcpu->vm->pio, run->io.port, run->io.direction == KVM_EXIT_IO_OUT,
			   data + (size_t)i * size, size);
	pthread_mutex_unlock(&vcpu->vm->dev_lock);
}

static int vcpu_stop_report(struct vcpu *vcpu, int status, const char *what, const uint8_t *insn,
			    unsigned insn_len)
{
	char where[192];
	vcpu_arch_where(vcpu, insn, insn_len, where, sizeof(where));
	vmm_log("%s at %s", what, where);
	return status;
}

static const char *vcpu_internal_error_name(uint32_t suberror)
{
	switch (suberror) {
	case KVM_INTERNAL_ERROR_EMULATION:
		return "emulation failure";
	case KVM_INTERNAL_ERROR_SIMUL_EX:
		return "exception while delivering an exception";
	case KVM_INTERNAL_ERROR_DELIVERY_EV:
		return "exit while delivering an event";
	default:
		return "other";
	}
}

/* Handles one exit; returns -1 to keep running or the final status. */
static int vcpu_handle_exit(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	char what[128];

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		vcpu_exit_io(vcpu);
		return -1;
	case KVM_EXIT_MMIO:
		pthread_mutex_lock(&vcpu->vm->dev_lock);
		bus_access(&vcpu->vm->mmio, run->mmio.phys_addr, run->mmio.is_write, run->mmio.data,
			   run->mmio.len);
		pthread_mutex_unlock(&vcpu->vm->dev_lock);
		return -1;
	case KVM_EXIT_INTR:
		return -1;
	case KVM_EXIT_HLT:
		return vcpu_stop_report(vcpu, VMM_EXIT_HALTED, "guest halted", NULL, 0);
	case KVM_EXIT_SHUTDOWN:
		if (vcpu_arch_shutdown_was_reset(vcpu)) {
			/* The reset vector is not where the guest failed: say what is known. */
			vmm_log("guest shut down (triple fault) on vCPU %u; fault site unknown: "
				"this "
				"host's KVM (AMD SVM) resets the vCPU before reporting a shutdown",
				vcpu->id);
			return VMM_EXIT_SHUTDOWN;
		}
		return vcpu_stop_report(vcpu, VMM_EXIT_SHUTDOWN, "guest shut down (triple fault)",
					NULL, 0);
	case KVM_EXIT_SYSTEM_EVENT: {
		what[0] = '\0';
		int status = vcpu_arch_system_event(vcpu, what, sizeof(what));
		return what[0] ? vcpu_stop_report(vcpu, status, what, NULL, 0) : status;
	}
	case KVM_EXIT_INTERNAL_ERROR: {
		const uint8_t *insn = NULL;
		unsigned insn_len = 0;
		if (run->emulation_failure.suberror == KVM_INTERNAL_ERROR_EMULATION &&
		    run->emulation_failure.ndata >= 3 &&
		    (run->emulation_failure.flags &
		     KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES)) {
			insn = run->emulation_failure.insn_bytes;
			insn_len = run->emulation_failure.insn_size;
			if (insn_len > sizeof(run->emulation_failure.insn_bytes))
				insn_len = sizeof(run->emulation_failure.insn_bytes);
		}
		if (run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION &&
		    vcpu_arch_recover(vcpu, insn, insn_len) == 0)
			return -1;
		snprintf(what, sizeof(what), "KVM internal error (suberror %u: %s)",
			 run->internal.suberror, vcpu_internal_error_name(run->internal.suberror));
		return vcpu_stop_report(vcpu, VMM_EXIT_INTERNAL_ERROR, what, insn, insn_len);
	}
	case KVM_EXIT_FAIL_ENTRY:
		snprintf(what, sizeof(what),
			 "KVM could not enter the guest (hardware entry failure reason 0x%llx, cpu "
			 "%u)",
			 (unsigned long long)run->fail_entry.hardware_entry_failure_reason,
			 run->fail_entry.cpu);
		return vcpu_stop_report(vcpu, VMM_EXIT_FAIL_ENTRY, what, NULL, 0);
	default:
		snprintf(what, sizeof(what), "unhandled KVM exit reason %u", run->exit_reason);
		return vcpu_stop_report(vcpu, VMM_EXIT_UNEXPECTED, what, NULL, 0);
	}
}

/* Holds vCPU threads between their own lock-down and their first KVM_RUN, until the
 * process as a whole is locked down. */
struct vcpu_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ready; /* threads past their lock-down hook */
	bool open;
	const struct vcpu_lockdown *lk;
	/* Pausing (struct vcpu_pause): set by the waiting thread, parked threads counted. */
	const struct vcpu_pause *pz;
	atomic_bool pause;
	unsigned parked;
};

static void vcpu_gate_wait(struct vcpu *vcpu)
{
	struct vcpu_gate *g = vcpu->gate;
	const struct vcpu_lockdown *lk = g->lk;

	if (lk && lk->vcpu_thread && lk->vcpu_thread(vcpu, lk->arg))
		vm_request_stop(vcpu->vm, VMM_EXIT_SETUP);
	pthread_mutex_lock(&g->lock);
	g->ready++;
	pthread_cond_broadcast(&g->cond);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/* Waits until `started` threads are ready, runs the process-wide hook, opens the gate. */
static void vcpu_gate_open(struct vcpu_gate *g, struct vm *vm, unsigned started)
{
	pthread_mutex_lock(&g->lock);
	while (g->ready < started)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	if (g->lk && g->lk->all_ready && g->lk->all_ready(g->lk->arg))
		vm_request_stop(vm, VMM_EXIT_SETUP);
	pthread_mutex_lock(&g->lock);
	g->open = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* Paused: completes the instruction of the last exit (KVM_RUN with immediate_exit returns
 * EINTR once the pending I/O is done), hands over to on_vcpu, waits until resumed. */
static void vcpu_park(struct vcpu *vcpu)
{
	struct vcpu_gate *g = vcpu->gate;

	/* Completing an instruction can need another exit (the next step of a string I/O, the
	 * next part of a split MMIO access): handled as the run loop would, until KVM says
	 * EINTR, i.e. nothing is pending. */
	for (;;) {
		vcpu->run->immediate_exit = 1;
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno != EINTR && errno != EAGAIN)
				vmm_log("vCPU %u: KVM_RUN to complete pending I/O failed: %s",
					vcpu->id, strerror(errno));
			break;
		}
		int status = vcpu_handle_exit(vcpu);
		if (status >= 0) {
			vm_request_stop(vcpu->vm, status);
			break;
		}
	}
	vcpu->run->immediate_exit = 0;
	int rc = g->pz->on_vcpu(vcpu, g->pz->arg);
	pthread_mutex_lock(&g->lock);
	vcpu->pause_rc = rc;
	vcpu->parked = true;
	g->parked++;
	pthread_cond_broadcast(&g->cond);
	while (atomic_load(&g->pause) && !vm_stopping(&vcpu->vm->stop))
		pthread_cond_wait(&g->cond, &g->lock);
	g->parked--;
	vcpu->parked = false;
	pthread_mutex_unlock(&g->lock);
}

/* One vCPU's loop: until the VM stops. Its own terminal exit stops the VM. */
static void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;
	struct vm *vm = vcpu->vm;

	vcpu_gate_wait(vcpu);
	vcpu->first_run_ns = mono_ns();
	if (vcpu->id == 0)
		atomic_store(&vm->first_run_ns, vcpu->first_run_ns);
	while (!vm_stopping(&vm->stop)) {
		if (atomic_load(&vcpu->gate->pause)) {
			vcpu_park(vcpu);
			continue;
		}
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				vcpu->run->immediate_exit = 0;
				continue;
			}
			vmm_log("KVM_RUN failed on vCPU %u: %s", vcpu->id, strerror(errno));
			vm_request_stop(vm, VMM_EXIT_UNEXPECTED);
			break;
		}
		int status = vcpu_handle_exit(vcpu);
		if (status >= 0)
			vm_request_stop(vm, status);
	}
	return NULL;
}

/* Makes a vCPU leave KVM_RUN: immediate_exit covers a kick that lands just before the
 * ioctl, the signal one that lands inside it. */
static void vcpu_kick(struct vcpu *vcpu)
{
	vcpu->run->immediate_exit = 1;
	pthread_kill(vcpu->thread, VCPU_KICK_SIGNAL);
}

/* A pause request: every running vCPU parked (kicked until it is), on_all, then on. */
static void vcpu_pause_all(struct vcpu *vcpus, unsigned n, unsigned started, struct vcpu_gate *g)
{
	struct vm *vm = vcpus[0].vm;
	struct signalfd_siginfo si;

	if (read(g->pz->fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return; /* someone else's read: nothing pending */
	atomic_store(&g->pause, true);
	/* One kick each, then again every 10 ms only for those not parked yet: a signal storm
	 * into vCPUs that are already out of the guest buys nothing. */
	pthread_mutex_lock(&g->lock);
	while (g->parked < started && !vm_stopping(&vm->stop)) {
		for (unsigned i = 0; i < n; i++)
			if (vcpus[i].thread_started && !vcpus[i].parked)
				vcpu_kick(&vcpus[i]);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
		until.tv_nsec += 10 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->cond, &g->lock, &until);
	}
	pthread_mutex_unlock(&g->lock);
	if (!vm_stopping(&vm->stop)) {
		int status = g->pz->on_all(g->pz->arg);
		if (status >= 0)
			vm_request_stop(vm, status);
	}
	pthread_mutex_lock(&g->lock);
	atomic_store(&g->pause, false);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

int vcpu_run_all(struct vcpu *vcpus, unsigned n, uint64_t timeout_ms,
		 const struct vcpu_lockdown *lk, const struct vcpu_pause *pz)
{
	struct vm *vm = vcpus[0].vm;
	struct vcpu_gate gate = { .lk = lk, .pz = pz };
	struct sigaction sa;
	sigset_t kick, old;
	unsigned started = 0;
	int err;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = vcpu_kick_handler; /* no SA_RESTART: KVM_RUN must return */
	sigemptyset(&sa.sa_mask);
	if (sigaction(VCPU_KICK_SIGNAL, &sa, NULL) < 0) {
		vmm_log_setup("cannot install the vCPU kick handler", errno, NULL);
		return VMM_EXIT_SETUP;
	}
	/* vCPU threads inherit this mask: the kick must be deliverable to them. */
	sigemptyset(&kick);
	sigaddset(&kick, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &kick, &old);
	pthread_mutex_init(&gate.lock, NULL);
	pthread_cond_init(&gate.cond, NULL);
	for (unsigned i = 0; i < n; i++) {
		vcpus[i].gate = &gate;
		err = pthread_create(&vcpus[i].thread, NULL, vcpu_thread, &vcpus[i]);
		if (err) {
			vmm_log_setup("cannot start a vCPU thread", err, "raise the thread limit");
			vm_request_stop(vm, VMM_EXIT_SETUP);
			break;
		}
		vcpus[i].thread_started = true;
		started++;
	}
	/* This thread never runs guest code: keep kicks away from it. */
	pthread_sigmask(SIG_BLOCK, &kick, NULL);
	vcpu_gate_open(&gate, vm, started);

	uint64_t deadline = timeout_ms ? mono_ns() + timeout_ms * 1000000ULL : 0;
	while (!vm_stopping(&vm->stop)) {
		int wait_ms = -1;
		if (deadline) {
			uint64_t now = mono_ns();
			if (now >= deadline) {
				/* Stop first: the line may wait (a stderr nobody reads), and
				 * only a stopping VM bounds that wait (vmm/stopwait.h). */
				vm_request_stop(vm, VMM_EXIT_TIMEOUT);
				vmm_log("guest still running after %llu ms: stopped (timeout)",
					(unsigned long long)timeout_ms);
				break;
			}
			uint64_t left = (deadline - now + 999999) / 1000000;
			wait_ms = left > 60000 ? 60000 : (int)left;
		}
		struct pollfd p[2] = { { .fd = vm->stop.fd, .events = POLLIN },
				       { .fd = pz ? pz->fd : -1, .events = POLLIN } };
		if (poll(p, 2, wait_ms) < 0 && errno != EINTR) {
			vmm_log("poll on the stop eventfd failed: %s", strerror(errno));
			vm_request_stop(vm, VMM_EXIT_UNEXPECTED);
		} else if (pz && (p[1].revents & POLLIN) && !vm_stopping(&vm->stop)) {
			vcpu_pause_all(vcpus, n, started, &gate);
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if (!vcpus[i].thread_started)
			continue;
		/* Kick until the thread is gone: one signal could land between a KVM_RUN's
		 * return and the stop check and be absorbed by immediate_exit reset. */
		while (pthread_tryjoin_np(vcpus[i].thread, NULL) == EBUSY) {
			vcpu_kick(&vcpus[i]);
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
		vcpus[i].thread_started = false;
		vcpus[i].gate = NULL;
	}
	pthread_mutex_destroy(&gate.lock);
	pthread_cond_destroy(&gate.cond);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return atomic_load(&vm->stop.status);
}
