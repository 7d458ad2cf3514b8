/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_stop.c: every helper that blocks a vCPU or the main thread gives way once
 * the VM is stopping — the console (UART, test serial) toward a reader that stopped reading,
 * and the vhost-user front end toward a back end that stopped answering — and a back end's
 * reply deadline holds while the thread keeps being kicked (vcpu_run_all's stop signal).
 * Without KVM: the devices are driven through their bus callbacks from a worker thread that
 * plays the vCPU, kicked with VCPU_KICK_SIGNAL as the main thread does. No time is asserted:
 * each blocked call must merely return before a generous watchdog. */
#include "lib/mono.h"
#include "lib/test_guest_abi.h"
#include "lib/vhost_user.h"
#include "lib/vmm_exit.h"
#include "vmm/log.h"
#include "vmm/testdev.h"
#include "vmm/uart.h"
#include "vmm/vcpu.h"
#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/vm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define WATCHDOG_MS 20000 /* far beyond any honest return; only a hang reaches it */
#define VIRTIO_BASE 0xd0000000ull

static void kick_handler(int sig)
{
	(void)sig;
}

static int setup_kick(void **state)
{
	(void)state;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler; /* no SA_RESTART, as in vcpu_run_all */
	sigemptyset(&sa.sa_mask);
	signal(SIGPIPE, SIG_IGN);
	return sigaction(VCPU_KICK_SIGNAL, &sa, NULL);
}

static uint64_t now_ms(void)
{
	return mono_ns() / 1000000;
}

/* One blocked call on a worker thread (the "vCPU"). */
struct worker {
	pthread_t th;
	void (*fn)(struct worker *w);
	void *arg;
	atomic_bool done;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	w->fn(w);
	atomic_store(&w->done, true);
	return NULL;
}

static void worker_start(struct worker *w, void (*fn)(struct worker *), void *arg)
{
	w->fn = fn;
	w->arg = arg;
	atomic_init(&w->done, false);
	assert_int_equal(pthread_create(&w->th, NULL, worker_main, w), 0);
}

/* Kicks the worker every millisecond (when kick), as the main thread kicks vCPUs until they
 * join, for at most WATCHDOG_MS. true when the worker returned. With a vm, vm_request_stop() is
 * called stop_after_ms after the start (the run's end: a timeout or another vCPU's exit). */
static bool worker_wait_kick(struct worker *w, struct vm *vm, int stop_after_ms, bool kick)
{
	uint64_t t0 = now_ms();
	bool stopped = false;
	while (!atomic_load(&w->done) && now_ms() - t0 < WATCHDOG_MS) {
		if (vm && !stopped && now_ms() - t0 >= (uint64_t)stop_after_ms) {
			vm_request_stop(vm, VMM_EXIT_TIMEOUT);
			stopped = true;
		}
		if (kick)
			pthread_kill(w->th, VCPU_KICK_SIGNAL);
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return atomic_load(&w->done);
}

static bool worker_wait(struct worker *w, struct vm *vm, int stop_after_ms)
{
	return worker_wait_kick(w, vm, stop_after_ms, true);
}

/* Fills a pipe whose reader holds it open and never reads: the next write blocks. */
static void fill_pipe(int p[2])
{
	char junk[4096];
	memset(junk, 'j', sizeof(junk));
	int fl = fcntl(p[1], F_GETFL);
	fcntl(p[1], F_SETFL, fl | O_NONBLOCK);
	while (write(p[1], junk, sizeof(junk)) > 0)
		;
	fcntl(p[1], F_SETFL, fl);
}

static void full_pipe(int p[2])
{
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fill_pipe(p);
}

/* Lets a worker that is stuck on the pipe finish, so a failing test still ends. */
static void drain_until_done(int rd, struct worker *w)
{
	char buf[65536];
	int fl = fcntl(rd, F_GETFL);
	fcntl(rd, F_SETFL, fl | O_NONBLOCK);
	while (!atomic_load(&w->done)) {
		if (read(rd, buf, sizeof(buf)) <= 0)
			usleep(1000);
	}
	while (read(rd, buf, sizeof(buf)) > 0)
		;
	fcntl(rd, F_SETFL, fl);
}

/* ---- the console ---------------------------------------------------------------------- */

static void uart_line(struct worker *w)
{
	struct uart *u = w->arg;
	const char *line = "a console line nobody reads\n";
	for (const char *c = line; *c; c++)
		uart_access(u, 0, true, (uint8_t *)c, 1); /* THR: the '\n' flushes */
}

static void uart_last_flush(struct worker *w)
{
	uart_flush(w->arg);
}

static void test_uart_reader_stopped(void **state)
{
	(void)state;
	struct vm vm;
	struct uart u;
	struct worker w;
	int p[2];

	assert_int_equal(vm_create_nokvm(&vm, 1 << 20), 0);
	full_pipe(p);
	assert_int_equal(uart_init(&u, &vm, &vm.pio, 0x3f8, 4, p[1]), 0);
	worker_start(&w, uart_line, &u);
	bool returned = worker_wait(&w, &vm, 100);
	drain_until_done(p[0], &w);
	pthread_join(w.th, NULL);
	assert_true(returned); /* uart_flush gave up once the VM stopped */

	/* The main thread's last flush after the run (dev_uart_fini), nobody kicking it, gives
	 * up too when the reader still does not read. */
	fill_pipe(p);
	uart_access(&u, 0, true, (uint8_t *)"z", 1);
	worker_start(&w, uart_last_flush, &u);
	returned = worker_wait_kick(&w, NULL, 0, false);
	drain_until_done(p[0], &w);
	pthread_join(w.th, NULL);
	assert_true(returned);
	close(p[0]);
	close(p[1]);
	vm_destroy(&vm);
}

static void testdev_line(struct worker *w)
{
	struct vm *vm = w->arg;
	const char *line = "a test guest's line nobody reads\n";
	for (const char *c = line; *c; c++)
		bus_access(&vm->pio, TG_PORT_SERIAL, true, (uint8_t *)c, 1);
}

static void test_testdev_reader_stopped(void **state)
{
	(void)state;
	struct vm vm;
	struct testdev td;
	struct worker w;
	int p[2];

	assert_int_equal(vm_create_nokvm(&vm, 1 << 20), 0);
	full_pipe(p);
	assert_int_equal(testdev_init(&td, &vm, p[1], true), 0);
	worker_start(&w, testdev_line, &vm);
	bool returned = worker_wait(&w, &vm, 100);
	drain_until_done(p[0], &w);
	pthread_join(w.th, NULL);
	assert_true(returned);
	close(p[0]);
	close(p[1]);
	vm_destroy(&vm);
}

static void log_line(struct worker *w)
{
	(void)w;
	vmm_log("a diagnostic line on a stderr nobody reads");
}

/* A one-line report toward a stderr that is not read, on the main thread (the timeout's own
 * message, the unknown-access count at the end), which nobody kicks. */
static void test_log_reader_stopped(void **state)
{
	(void)state;
	struct vm vm;
	struct worker w;
	int p[2], saved = dup(STDERR_FILENO);

	assert_int_equal(vm_create_nokvm(&vm, 1 << 20), 0);
	full_pipe(p);
	dup2(p[1], STDERR_FILENO);
	vmm_log_bind(&vm.stop);
	worker_start(&w, log_line, NULL);
	bool returned = worker_wait_kick(&w, &vm, 100, false);
	drain_until_done(p[0], &w);
	pthread_join(w.th, NULL);
	vmm_log_bind(NULL);
	dup2(saved, STDERR_FILENO);
	close(saved);
	assert_true(returned);
	close(p[0]);
	close(p[1]);
	vm_destroy(&vm);
}

/* ---- a back end that stops answering ------------------------------------------------------ */

/* Answers the set-up honestly (what bulkhead-vmm asks before any vCPU runs), then reads
 * SET_FEATURES (sent at the driver's DRIVER_OK) and never answers again. */
struct mute_backend {
	int sock;
	pthread_t th;
	int quit[2]; /* readable: the test is over */
};

static void *mute_main(void *arg)
{
	struct mute_backend *b = arg;
	struct vhost_user_msg m;
	uint64_t v;

	while (vhost_user_recv(b->sock, &m, VHOST_USER_TO_BACKEND, false, NULL) == 0) {
		vhost_user_msg_close_fds(&m);
		switch (m.hdr.request) {
		case VHOST_USER_GET_FEATURES:
			v = 1ull << VHOST_USER_F_PROTOCOL_FEATURES | 1ull << VIRTIO_F_VERSION_1;
			vhost_user_reply(b->sock, &m, &v, 8);
			continue;
		case VHOST_USER_GET_PROTOCOL_FEATURES:
			v = 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK;
			vhost_user_reply(b->sock, &m, &v, 8);
			continue;
		case VHOST_USER_SET_FEATURES:
			break; /* silent from here on, socket open */
		default:
			vhost_user_reply_ack(b->sock, &m, 0);
			continue;
		}
		break;
	}
	char c;
	(void)!read(b->quit[0], &c, 1);
	return NULL;
}

static void mute_start(struct mute_backend *b, int *front_sock)
{
	int s[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
	assert_int_equal(pipe2(b->quit, O_CLOEXEC), 0);
	b->sock = s[1];
	*front_sock = s[0];
	assert_int_equal(pthread_create(&b->th, NULL, mute_main, b), 0);
}

static void mute_stop(struct mute_backend *b)
{
	shutdown(b->sock, SHUT_RDWR); /* a front end still waiting sees the end */
	(void)!write(b->quit[1], "q", 1);
	pthread_join(b->th, NULL);
	close(b->sock);
	close(b->quit[0]);
	close(b->quit[1]);
}

struct virtio_fixture {
	struct vm vm;
	struct virtio_devs devs;
	struct mute_backend be;
};

static void mmio_wr(struct vm *vm, uint64_t off, uint32_t v)
{
	bus_access(&vm->mmio, VIRTIO_BASE + off, true, (uint8_t *)&v, 4);
}

/* The driver's initialisation up to DRIVER_OK, where the front end sends SET_FEATURES. */
static void driver_ok(struct worker *w)
{
	struct vm *vm = w->arg;
	mmio_wr(vm, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	mmio_wr(vm, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	mmio_wr(vm, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	mmio_wr(vm, VIRTIO_MMIO_DRIVER_FEATURES, 1); /* VERSION_1 */
	uint32_t s =
		VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK;
	mmio_wr(vm, VIRTIO_MMIO_STATUS, s);
	mmio_wr(vm, VIRTIO_MMIO_STATUS, s | VIRTIO_CONFIG_S_DRIVER_OK);
}

static void virtio_setup(struct virtio_fixture *fx, unsigned timeout_ms)
{
	int front;
	assert_int_equal(vm_create_nokvm(&fx->vm, 1 << 20), 0);
	virtio_devs_init(&fx->devs, &fx->vm, VIRTIO_BASE, 1, 5);
	mute_start(&fx->be, &front);
	struct vhost_user_dev_cfg cfg = {
		.type = VHOST_USER_DEV_VSOCK,
		.socket_fd = front,
		.name = "mute back end",
		.vsock_cid = 3,
		.timeout_ms = timeout_ms,
	};
	assert_int_equal(virtio_vhost_user_add(&fx->devs, &cfg), 0);
}

static void virtio_teardown(struct virtio_fixture *fx)
{
	mute_stop(&fx->be);
	virtio_devs_destroy(&fx->devs);
	vm_destroy(&fx->vm);
}

/* The VM stops (its timeout) while a vCPU waits for a back end's ack: the wait ends, and the
 * stop keeps its own status (the back end is not blamed for the VM's own end). */
static void test_backend_silent_vm_stops(void **state)
{
	(void)state;
	static struct virtio_fixture fx;
	struct worker w;

	virtio_setup(&fx, 60000);
	worker_start(&w, driver_ok, &fx.vm);
	bool returned = worker_wait(&w, &fx.vm, 100);
	virtio_teardown(&fx); /* ends the wait if it still hangs */
	pthread_join(w.th, NULL);
	assert_true(returned);
	assert_int_equal(atomic_load(&fx.vm.stop.status), VMM_EXIT_TIMEOUT);
}

/* No stop: a back end that stays silent past its reply deadline stops the VM with
 * VMM_EXIT_BACKEND, however often the waiting thread is interrupted meanwhile. */
static void test_backend_deadline_survives_kicks(void **state)
{
	(void)state;
	static struct virtio_fixture fx;
	struct worker w;

	virtio_setup(&fx, 300);
	worker_start(&w, driver_ok, &fx.vm);
	bool returned = worker_wait(&w, NULL, 0);
	virtio_teardown(&fx);
	pthread_join(w.th, NULL);
	assert_true(returned);
	assert_true(vm_stopping(&fx.vm.stop));
	assert_int_equal(atomic_load(&fx.vm.stop.status), VMM_EXIT_BACKEND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uart_reader_stopped),
		cmocka_unit_test(test_testdev_reader_stopped),
		cmocka_unit_test(test_log_reader_stopped),
		cmocka_unit_test(test_backend_silent_vm_stops),
		cmocka_unit_test(test_backend_deadline_survives_kicks),
	};
	return cmocka_run_group_tests(tests, setup_kick, NULL);
}
