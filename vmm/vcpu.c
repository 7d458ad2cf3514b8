/* vmm/vcpu.c: vCPU lifetime and the run loop — each KVM exit becomes a bus access, or ends
 * the run with a documented status (vmm/exit_status.h) and one line on stderr. */
#include "vmm/vcpu.h"

#include "vmm/exit_status.h"
#include "vmm/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Sent to the vCPU thread by its timeout timer; its only job is to make KVM_RUN return
 * EINTR. The handler has no state, so sharing it between VMs is harmless. */
#define VCPU_KICK_SIGNAL SIGUSR2

/* glibc 2.36 spells the SIGEV_THREAD_ID target only through its internal union. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

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

/* Arms a per-thread timer that first fires at the deadline and then every 10 ms, so a kick
 * that lands just before KVM_RUN blocks is repeated instead of lost. */
static int vcpu_arm_timeout(uint64_t timeout_ms, timer_t *timer)
{
	struct sigaction sa;
	struct sigevent sev;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = vcpu_kick_handler; /* no SA_RESTART: KVM_RUN must return */
	sigemptyset(&sa.sa_mask);
	if (sigaction(VCPU_KICK_SIGNAL, &sa, NULL) < 0)
		return -errno;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = VCPU_KICK_SIGNAL;
	sev.sigev_notify_thread_id = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, timer) < 0)
		return -errno;
	struct itimerspec its = {
		.it_value = { (time_t)(timeout_ms / 1000), (long)(timeout_ms % 1000) * 1000000L },
		.it_interval = { 0, 10 * 1000000L },
	};
	if (timer_settime(*timer, 0, &its, NULL) < 0) {
		int err = -errno;
		timer_delete(*timer);
		return err;
	}
	return 0;
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
	for (uint32_t i = 0; i < run->io.count; i++)
		bus_access(&vcpu->vm->pio, run->io.port, run->io.direction == KVM_EXIT_IO_OUT,
			   data + (size_t)i * size, size);
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
		bus_access(&vcpu->vm->mmio, run->mmio.phys_addr, run->mmio.is_write, run->mmio.data,
			   run->mmio.len);
		return -1;
	case KVM_EXIT_INTR:
		return -1;
	case KVM_EXIT_HLT:
		return vcpu_stop_report(vcpu, VMM_EXIT_HALTED, "guest halted", NULL, 0);
	case KVM_EXIT_SHUTDOWN:
		return vcpu_stop_report(vcpu, VMM_EXIT_SHUTDOWN, "guest shut down (triple fault)",
					NULL, 0);
	case KVM_EXIT_SYSTEM_EVENT:
		snprintf(what, sizeof(what), "guest system event %u (shutdown/reset)",
			 run->system_event.type);
		return vcpu_stop_report(vcpu, VMM_EXIT_SHUTDOWN, what, NULL, 0);
	case KVM_EXIT_INTERNAL_ERROR: {
		const uint8_t *insn = NULL;
		unsigned insn_len = 0;
		if (run->emulation_failure.suberror == KVM_INTERNAL_ERROR_EMULATION &&
		    run->emulation_failure.ndata >= 3 &&
		    (run->emulation_failure.flags &
		     KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES)) {
			insn = run->emulation_failure.insn_bytes;
			insn_len = run->emulation_failure.insn_size;
		}
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

int vcpu_run(struct vcpu *vcpu, uint64_t timeout_ms)
{
	struct vm *vm = vcpu->vm;
	uint64_t deadline = 0;
	timer_t timer;
	int status = -1;

	if (timeout_ms) {
		int err = vcpu_arm_timeout(timeout_ms, &timer);
		if (err) {
			vmm_log_setup("cannot arm the run timeout timer", -err, NULL);
			return VMM_EXIT_SETUP;
		}
		deadline = vm_now_ns() + timeout_ms * 1000000ULL;
	}
	vcpu->first_run_ns = vm_now_ns();
	while (status < 0) {
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				if (deadline && vm_now_ns() >= deadline) {
					vmm_log("guest still running after %llu ms: stopped "
						"(timeout)",
						(unsigned long long)timeout_ms);
					status = VMM_EXIT_TIMEOUT;
				}
				continue;
			}
			vmm_log("KVM_RUN failed: %s", strerror(errno));
			status = VMM_EXIT_UNEXPECTED;
			break;
		}
		status = vcpu_handle_exit(vcpu);
		if (vm->stop)
			status = vm->stop_status;
	}
	if (timeout_ms)
		timer_delete(timer);
	return status;
}
