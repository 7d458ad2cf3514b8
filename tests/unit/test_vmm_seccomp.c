/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_seccomp.c: bulkhead-vmm's allow-lists (vmm/seccomp.c) hold what each
 * thread role does after lock-down, without KVM: in a child process, a vCPU thread and the
 * back-end watcher install their own lists and do their work (console and log writes that
 * wait beside the stop eventfd, vhost-user messages on the pinned socket, the irqchip ioctl,
 * locks) and end; the main thread installs its list, kicks, waits, joins and tears down. A
 * call off a list kills the child with SIGSYS. In a sanitizer build this also proves the
 * run time's own calls (thread set-up and teardown, reports' needs) are on every list. */
#include "lib/vhost_user.h"
#include "vmm/seccomp.h"
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

static int child(void)
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
	if (vmm_seccomp_build(&r.j))
		return 2;
	if (pthread_create(&b, NULL, backend, &r) || pthread_create(&w, NULL, watcher_role, &r) ||
	    pthread_create(&v, NULL, vcpu_role, &r))
		return 3;
	if (vmm_seccomp_install(&r.j.main))
		return 4;
	pthread_barrier_wait(&r.installed);
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

static void test_roles_under_their_lists(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		print_error("child killed by signal %d (31: a call off a list)\n", WTERMSIG(st));
	else if (WEXITSTATUS(st))
		print_error("child exit status %d\n", WEXITSTATUS(st));
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roles_under_their_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
