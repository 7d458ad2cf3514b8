/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/vsock_restart_probe.c: ring restarts against the real bulkhead-vsock without KVM.
 *   vsock-restart-probe serve PREFIX
 *       the host side of the scenarios: PREFIX_5000 echoes, PREFIX_5001 streams a pattern
 *       (for the freestanding guest tests/guests/vsock.c under bulkhead-vmm with KVM)
 *   vsock-restart-probe drive VHOST_SOCKET PREFIX BACKEND_PID
 *       plays the VMM with bulkhead-vmm's own virtio-mmio transport and vhost-user front end
 *       (guest RAM in a memfd shared with the back end, kicks written to the kick eventfds as
 *       KVM's ioeventfds would) and the guest with the same driver the test guest runs
 *       (tests/guests/vsock_drv.c): traffic, QueueReady 0 -> 1, reset and re-initialisation,
 *       a reset in mid-stream, QEMU's RESET_OWNER; after each, traffic must flow again; then
 *       the back end must be alive and idle (its CPU time over an idle second).
 * Prints "PASS step" / "FAIL step: detail" lines for tests/e2e/test_vsock_restart.sh. */
#include "lib/mono.h"
#include "lib/unix_listen.h"
#include "tests/guests/vsock_drv.h"
#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/vm.h"

#include <errno.h>
#include <linux/virtio_mmio.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROBE_MEM  (16u << 20)
#define PROBE_BASE 0xd0000000ull
#define PROBE_AREA 0x400000ull
#define PROBE_CID  3

static struct vm vm;
static struct virtio_devs devs;
static int failures;
static pid_t backend;
static long between_ticks = -1; /* the back end's CPU while the device sat reset */

static void check(int cond, const char *step, const char *detail)
{
	if (cond) {
		printf("PASS %s\n", step);
	} else {
		printf("FAIL %s: %s\n", step, detail);
		failures++;
	}
	fflush(stdout);
}

/* ---- the host side: echo and stream listeners ---------------------------------------- */

static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n)
			break;
	close(fd);
	return NULL;
}

static void *stream_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t buf[4096];
	uint32_t k = 0;
	for (;;) {
		for (size_t i = 0; i < sizeof(buf); i++, k++)
			buf[i] = (uint8_t)(k * 7u + 3u); /* vd_pattern() */
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			break; /* the guest's side went away */
	}
	close(fd);
	return NULL;
}

struct listener {
	int fd;
	void *(*conn)(void *);
};

static void *accept_loop(void *arg)
{
	struct listener *l = arg;
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		pthread_t th;
		if (pthread_create(&th, NULL, l->conn, (void *)(intptr_t)fd) == 0)
			pthread_detach(th);
		else
			close(fd);
	}
}

static int serve(const char *prefix)
{
	static struct listener ls[2];
	void *(*conns[2])(void *) = { echo_conn, stream_conn };
	const unsigned ports[2] = { VD_PORT_ECHO, VD_PORT_STREAM };
	for (int i = 0; i < 2; i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s_%u", prefix, ports[i]);
		unlink(path);
		ls[i].fd = unix_listen(path, 16, false);
		ls[i].conn = conns[i];
		pthread_t th;
		if (ls[i].fd < 0 || pthread_create(&th, NULL, accept_loop, &ls[i])) {
			fprintf(stderr, "vsock-restart-probe: cannot listen on %s\n", path);
			return -1;
		}
		pthread_detach(th);
	}
	return 0;
}

/* ---- the driver's platform: bulkhead-vmm's transport, no KVM ----------------------------- */

uint32_t vd_plat_read32(uint64_t gpa)
{
	uint32_t v = 0;
	pthread_mutex_lock(&vm.dev_lock);
	bus_access(&vm.mmio, gpa, false, (uint8_t *)&v, 4);
	pthread_mutex_unlock(&vm.dev_lock);
	return v;
}

void vd_plat_write32(uint64_t gpa, uint32_t v)
{
	pthread_mutex_lock(&vm.dev_lock);
	bus_access(&vm.mmio, gpa, true, (uint8_t *)&v, 4);
	pthread_mutex_unlock(&vm.dev_lock);
}

/* What a wired transport's ioeventfd does in the kernel: signal the queue's kick eventfd on
 * every QueueNotify write, whatever state the device is in. */
void vd_plat_notify(uint64_t base, uint32_t q)
{
	struct virtio_mmio *t = virtio_devs_transport(&devs, 0);
	(void)base;
	if (t && q < t->cfg.nqueues)
		(void)eventfd_write(t->q[q].kick_fd, 1);
}

void *vd_plat_ptr(uint64_t gpa, uint64_t len)
{
	void *p = gmem_ptr(&vm.mem, gpa, len);
	if (!p) {
		fprintf(stderr, "vsock-restart-probe: driver address 0x%llx outside RAM\n",
			(unsigned long long)gpa);
		abort();
	}
	return p;
}

uint64_t vd_plat_now(void)
{
	return mono_ns();
}

uint64_t vd_plat_timeout(void)
{
	return 10ull * 1000000000ull; /* a hang check, not a timing assertion */
}

void vd_plat_relax(void)
{
	usleep(100);
}

void vd_plat_say(const char *s)
{
	printf("# %s", s);
}

static long cpu_ticks(pid_t pid);

/* The device is reset and was notified on every queue; the back end must now sit idle (a stale
 * kick registration would keep it busy for good). A third of a second is plenty to see a
 * spinning process: it uses all of it. */
void vd_plat_between(void)
{
	long t0 = cpu_ticks(backend);
	usleep(330000);
	long t1 = cpu_ticks(backend);
	between_ticks = t0 < 0 || t1 < 0 ? -1 : t1 - t0;
}

/* ---- the steps ------------------------------------------------------------------------- */

static void step(const char *name, int err)
{
	char detail[128];
	snprintf(detail, sizeof(detail), "driver error %d%s", err,
		 vm_stopping(&vm.stop) ? " and the VMM side stopped the VM" : "");
	check(err == 0 && !vm_stopping(&vm.stop), name, detail);
}

/* A device reset as QEMU's vhost-user front end may send it (RESET_OWNER, its reset_device
 * without RESET_DEVICE), then the memory table again, as its vhost_dev_start does. Sent on
 * bulkhead-vmm's connection, between the guest's reset and its re-initialisation. */
static int reset_owner(void)
{
	int sock = virtio_devs_socket(&devs, 0);
	struct vhost_user_wait w = vhost_user_wait_for(5000, -1);
	struct vhost_user_msg m, r;
	vhost_user_msg_init(&m, VHOST_USER_RESET_OWNER, VHOST_USER_FLAG_NEED_REPLY, 0);
	int err = vhost_user_send(sock, &m, &w);
	if (!err)
		err = vhost_user_recv(sock, &r, VHOST_USER_TO_FRONTEND, true, &w);
	if (!err && (r.hdr.request != VHOST_USER_RESET_OWNER || r.p.u64 != 0))
		err = -EPROTO;
	if (err)
		return err;
	struct vu_front f;
	vu_front_adopt(&f, sock, "probe", 5000, -1);
	f.protocol_features = 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK;
	return vu_front_set_mem_table(&f, &vm.mem); /* f is not closed: the socket is devs' */
}

/* CPU ticks (user + system) the process has used, from /proc/PID/stat. */
static long cpu_ticks(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the name may hold spaces */
	unsigned long ut, st;
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (long)(ut + st);
}

static struct vd vd;

static void on_stop(void *arg)
{
	(void)arg;
}

/* reset_busy, then whether the back end idled between the reset and the re-init. */
static void reset_busy_step(const char *name)
{
	char detail[128];
	long hz = sysconf(_SC_CLK_TCK);
	between_ticks = -1;
	step(name, vd_scenario_reset_busy(&vd));
	snprintf(detail, sizeof(detail), "%ld of %ld ticks in a third of a second", between_ticks,
		 hz);
	check(between_ticks >= 0 && between_ticks * 6 < hz,
	      "  ... back end idle while the device sat reset and notified", detail);
}

static int drive(const char *sock)
{
	char detail[160];

	if (vm_create_nokvm(&vm, PROBE_MEM)) {
		printf("FAIL set-up: cannot create guest RAM\n");
		return 1;
	}
	virtio_devs_init(&devs, &vm, PROBE_BASE, 1, 5);
	struct vhost_user_dev_cfg cfg = {
		.type = VHOST_USER_DEV_VSOCK,
		.socket_path = sock,
		.name = "bulkhead-vsock",
		.vsock_cid = PROBE_CID,
	};
	int err = virtio_vhost_user_add(&devs, &cfg);
	check(err == 0, "handshake and memory table", strerror(-err));
	if (err || virtio_devs_watch(&devs, on_stop, NULL))
		return 1;
	check(vd_probe(&vd, PROBE_BASE, 1, PROBE_AREA) == 0, "vsock device found", "no window");

	step("basic: init, echo", vd_scenario_basic(&vd));
	reset_busy_step("reset-busy: reset in mid-stream, notifies, re-init, echo");
	for (int round = 1; round <= 2; round++) {
		snprintf(detail, sizeof(detail), "toggle %d: rx and tx QueueReady 0 -> 1, echo",
			 round);
		step(detail, vd_scenario_toggle(&vd));
	}
	step("reset: status 0, re-init, echo", vd_scenario_reset(&vd));
	reset_busy_step("reset-busy after toggles and a reset");
	vd_reset(&vd);
	err = reset_owner();
	snprintf(detail, sizeof(detail), "%s", strerror(-err));
	check(err == 0, "RESET_OWNER and SET_MEM_TABLE acked", detail);
	step("after RESET_OWNER: re-init, echo", vd_scenario_basic(&vd));

	/* Idle now: a back end left with a stale, readable kick entry would spin. */
	long hz = sysconf(_SC_CLK_TCK), t0 = cpu_ticks(backend);
	sleep(1);
	long t1 = cpu_ticks(backend);
	snprintf(detail, sizeof(detail), "%ld of %ld ticks in an idle second", t1 - t0, hz);
	check(t0 >= 0 && t1 >= 0 && (t1 - t0) * 2 < hz, "back end idle (no spinning)", detail);
	printf("# back end CPU in the idle second: %ld of %ld ticks\n", t1 - t0, hz);
	check(kill(backend, 0) == 0, "back end alive", "it exited");
	virtio_devs_destroy(&devs);
	vm_destroy(&vm);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && strcmp(argv[1], "serve") == 0) {
		if (serve(argv[2]))
			return 1;
		for (;;)
			pause();
	}
	if (argc == 5 && strcmp(argv[1], "drive") == 0) {
		if (serve(argv[3]))
			return 1;
		backend = (pid_t)atoi(argv[4]);
		return drive(argv[2]);
	}
	fprintf(stderr, "usage: vsock-restart-probe serve PREFIX\n"
			"       vsock-restart-probe drive VHOST_SOCKET PREFIX BACKEND_PID\n");
	return 2;
}
