/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_seccomp.c: bulkhead-vmm's allow-lists (vmm/seccomp.c) hold what each
 * thread role does after lock-down, without KVM: in a child process, a vCPU thread and the
 * back-end watcher install their own lists and do their work (console and log writes that
 * wait beside the stop eventfd, vhost-user messages on the pinned socket, the irqchip ioctl,
 * locks) and end; the main thread installs its list, kicks, waits, joins and tears down. A
 * call off a list kills the child with SIGSYS. In a sanitizer build this also proves the
 * run time's own calls (thread set-up and teardown, reports' needs) are on every list.
 * With --snapshot-fd the lists also hold a save: each vCPU's state ioctls, the main thread's
 * VM ioctls, the SIGUSR1 signalfd's read and the whole file written (vmm/snapshot.c) — and a
 * write to any other descriptor still kills. */
#include "lib/vhost_user.h"
#include "vmm/seccomp.h"
#include "vmm/snapshot.h"
#include "vmm/stopwait.h"
#include "vmm/vcpu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

struct roles {
	struct vmm_jail j;
	struct vm vm; /* only its stop eventfd and flags: what stopwait looks at */
	int sock[2];  /* [0] the VMM's side of a back end's socket */
	int out[2];   /* the console's pipe */
	pthread_mutex_t lock;
	pthread_barrier_t installed;
	bool snapshot; /* the roles of a VM run with --snapshot-fd */
};

static void kick(int sig)
{
	(void)sig;
}

static void *vcpu_role(void *arg)
{
	struct roles *r = arg;
	if (vmm_seccomp_install(&r->j.vcpu[0]))
		_exit(10);
	pthread_barrier_wait(&r->installed);
	/* A bus access under the device lock: the UART's line, its interrupt line, a
	 * vhost-user request and its ack (surplus descriptors closed), a log line. */
	pthread_mutex_lock(&r->lock);
	if (stopwait_write(&r->vm.stop, r->out[1], "console line\n", 13) != 13)
		_exit(11);
	(void)ioctl(r->j.vm_fd, KVM_IRQ_LINE, NULL); /* on an eventfd: fails, but allowed */
	struct vhost_user_msg m, reply;
	struct vhost_user_wait w = vhost_user_wait_for(5000, r->vm.stop.fd);
	vhost_user_msg_init(&m, VHOST_USER_SET_OWNER, VHOST_USER_FLAG_NEED_REPLY, 0);
	if (vhost_user_send(r->sock[0], &m, &w) ||
	    vhost_user_recv(r->sock[0], &reply, VHOST_USER_TO_FRONTEND, true, &w))
		_exit(12);
	pthread_mutex_unlock(&r->lock);
	/* Paused for a snapshot: the vCPU reads its own state (an eventfd here: each call fails
	 * with ENOTTY, but is allowed). */
	static const unsigned long reads[] = { KVM_GET_CPUID2, KVM_GET_MP_STATE,    KVM_GET_REGS,
					       KVM_GET_SREGS,  KVM_GET_FPU,	    KVM_GET_XSAVE,
					       KVM_GET_XCRS,   KVM_GET_DEBUGREGS,   KVM_GET_LAPIC,
					       KVM_GET_MSRS,   KVM_GET_VCPU_EVENTS, KVM_RUN };
	for (size_t i = 0; r->snapshot && i < sizeof(reads) / sizeof(reads[0]); i++)
		(void)ioctl(r->j.vcpu_fds[0], reads[i], NULL);
	/* Waits for the stop like a vCPU kicked out of KVM_RUN. */
	struct pollfd p = { .fd = r->vm.stop.fd, .events = POLLIN };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void *watcher_role(void *arg)
{
	struct roles *r = arg;
	if (vmm_seccomp_install(&r->j.watcher))
		_exit(20);
	pthread_barrier_wait(&r->installed);
	struct pollfd p[2] = { { .fd = r->sock[0], .events = POLLRDHUP },
			       { .fd = r->vm.stop.fd, .events = POLLIN } };
	while (poll(p, 2, -1) < 0 && errno == EINTR)
		;
	return NULL;
}

/* The back end's side: acks the one request (with a surplus descriptor to close). */
static void *backend(void *arg)
{
	struct roles *r = arg;
	struct vhost_user_msg m;
	if (vhost_user_recv(r->sock[1], &m, VHOST_USER_TO_BACKEND, false, NULL) == 0) {
		struct vhost_user_msg a;
		vhost_user_msg_init(&a, m.hdr.request, VHOST_USER_FLAG_REPLY, 8);
		a.fds[0] = eventfd(0, EFD_CLOEXEC);
		a.nfds = 1;
		vhost_user_send(r->sock[1], &a, NULL);
		close(a.fds[0]);
	}
	return NULL;
}

/* The main thread's part of a save: the VM's state, the signal, the file. */
static int main_saves(struct roles *r, int bad_fd)
{
	static const unsigned long reads[] = { KVM_GET_IRQCHIP, KVM_GET_PIT2, KVM_GET_CLOCK };
	struct signalfd_siginfo si;
	struct snap_out out = { 0 };
	char err[160];

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		(void)ioctl(r->j.vm_fd, reads[i], NULL);
	(void)read(r->j.snapshot_sig_fd, &si, sizeof(si)); /* nothing pending: EAGAIN */
	static uint8_t buf[256];
	out.buf = buf;
	out.cap = sizeof(buf);
	memset(r->vm.mem.host + 4096, 0x77, 4096);
	if (snap_put(&out, 1, 0, "state", 5))
		return 5;
	struct snap_header h = { .arch = SNAP_ARCH_X86_64, .mode = 2, .ncpus = 1 };
	if (snap_write(r->j.snapshot_fd, &h, &out, &r->vm.mem, err, sizeof(err)))
		return 6;
	if (bad_fd >= 0)
		(void)pwrite(bad_fd, "x", 1, 0); /* not the snapshot's descriptor: SIGSYS */
	return 0;
}

static int child(bool snapshot, bool off_list)
{
	static struct roles r;
	pthread_t v, w, b;
	struct sigaction sa = { .sa_handler = kick };

	sigaction(VCPU_KICK_SIGNAL, &sa, NULL);
	if (vm_create_nokvm(&r.vm, 1 << 20) || socketpair(AF_UNIX, SOCK_STREAM, 0, r.sock) ||
	    pipe(r.out))
		return 1;
	pthread_mutex_init(&r.lock, NULL);
	pthread_barrier_init(&r.installed, NULL, 3);
	r.j.vm_fd = eventfd(0, EFD_CLOEXEC);
	r.j.irqchip = true;
	r.j.nsocks = 1;
	r.j.socks[0] = r.sock[0];
	r.j.nvcpus = 1;
	r.j.vcpu_fds[0] = eventfd(0, EFD_CLOEXEC);
	r.j.snapshot_fd = r.j.snapshot_sig_fd = r.j.mem_fd = -1;
	r.snapshot = snapshot;
	int other = -1;
	if (snapshot) {
		char path[] = "/tmp/test_vmm_seccomp.XXXXXX";
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		r.j.snapshot_fd = mkstemp(path);
		unlink(path);
		r.j.snapshot_sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
		r.j.mem_fd = r.vm.mem.fd;
		other = dup(r.j.snapshot_fd);
		if (r.j.snapshot_fd < 0 || r.j.snapshot_sig_fd < 0 || other < 0)
			return 1;
	}
	if (vmm_seccomp_build(&r.j))
		return 2;
	if (pthread_create(&b, NULL, backend, &r) || pthread_create(&w, NULL, watcher_role, &r) ||
	    pthread_create(&v, NULL, vcpu_role, &r))
		return 3;
	if (vmm_seccomp_install(&r.j.main))
		return 4;
	pthread_barrier_wait(&r.installed);
	int rc = snapshot ? main_saves(&r, off_list ? other : -1) : 0;
	if (rc)
		return rc;
	/* The main thread's run: wait for the stop, request it, kick the vCPU until it joins. */
	struct pollfd p = { .fd = r.vm.stop.fd, .events = POLLIN };
	poll(&p, 1, 10);
	vm_request_stop(&r.vm, 0);
	while (pthread_tryjoin_np(v, NULL) == EBUSY) {
		pthread_kill(v, VCPU_KICK_SIGNAL);
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
	pthread_join(w, NULL);
	pthread_join(b, NULL);
	/* Tear-down: descriptors and guest RAM. */
	close(r.sock[0]);
	vm_destroy(&r.vm);
	return 0;
}

/* Runs child() in a process of its own: its wait status. */
static int run_child(bool snapshot, bool off_list)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(snapshot, off_list));
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void expect_clean(int st)
{
	if (WIFSIGNALED(st))
		print_error("child killed by signal %d (31: a call off a list)\n", WTERMSIG(st));
	else if (WEXITSTATUS(st))
		print_error("child exit status %d\n", WEXITSTATUS(st));
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_roles_under_their_lists(void **state)
{
	(void)state;
	expect_clean(run_child(false, false));
}

static void test_roles_with_snapshots(void **state)
{
	(void)state;
	expect_clean(run_child(true, false));
	int st = run_child(true, true);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roles_under_their_lists),
		cmocka_unit_test(test_roles_with_snapshots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
