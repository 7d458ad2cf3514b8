/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/vhost_user_probe.c: drives bulkhead-vmm's virtio-mmio transport and vhost-user
 * front end against a real back end (virtiofsd), playing the guest driver through the MMIO
 * bus, then kills the back end and times how long the VMM takes to notice.
 * Prints "PASS step" / "FAIL step: detail" lines for tests/e2e/test_vhost_user_virtiofsd.sh. */
#include "lib/vmm_exit.h"
#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/vm.h"

#include <errno.h>
#include <linux/fuse.h>
#include <linux/kvm.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_mmio.h>
#include <linux/virtio_ring.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PROBE_MEM   (16u << 20)
#define PROBE_BASE  0xd0000000ull
#define PROBE_GSI   5
#define PROBE_QSIZE 8

static int probe_failures;
static int probe_stop_pipe[2] = { -1, -1 };

static void check(int cond, const char *step, const char *detail)
{
	if (cond) {
		printf("PASS %s\n", step);
	} else {
		printf("FAIL %s: %s\n", step, detail);
		probe_failures++;
	}
	fflush(stdout);
}

static uint32_t rd(struct vm *vm, uint64_t off)
{
	uint32_t v;
	bus_access(&vm->mmio, PROBE_BASE + off, false, (uint8_t *)&v, 4);
	return v;
}

static void wr(struct vm *vm, uint64_t off, uint32_t v)
{
	bus_access(&vm->mmio, PROBE_BASE + off, true, (uint8_t *)&v, 4);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Where the probe's "driver" puts queue q's rings. */
static uint64_t ring_gpa(unsigned q, unsigned part)
{
	return 0x100000ull + q * 0x10000ull + part * 0x1000ull;
}

static void on_stop(void *arg)
{
	(void)arg;
	(void)!write(probe_stop_pipe[1], "x", 1);
}

/* A real VM when KVM is there (so ioeventfd/irqfd are exercised), else RAM, buses and the
 * stop eventfd only: vm_request_stop() then works exactly as it does with KVM. */
static int probe_vm(struct vm *vm, int *wired)
{
	if (access("/dev/kvm", R_OK | W_OK) == 0 && vm_create(vm, PROBE_MEM, 1, VM_IRQCHIP) == 0) {
		*wired = 1;
		return 0;
	}
	*wired = 0;
	return vm_create_nokvm(vm, PROBE_MEM);
}

/* The driver side of virtio-fs initialisation, as Linux's virtio_mmio + virtio_fs do it. */
static void probe_driver(struct vm *vm)
{
	char detail[128];

	check(rd(vm, VIRTIO_MMIO_MAGIC_VALUE) == 0x74726976 && rd(vm, VIRTIO_MMIO_VERSION) == 2 &&
		      rd(vm, VIRTIO_MMIO_DEVICE_ID) == VIRTIO_ID_FS,
	      "magic, version 2, device id 26", "wrong identification registers");
	char tag[8] = { 0 };
	for (unsigned i = 0; i < 5; i++)
		bus_access(&vm->mmio, PROBE_BASE + VIRTIO_MMIO_CONFIG + i, false,
			   (uint8_t *)&tag[i], 1);
	check(strcmp(tag, "work") == 0, "config space tag", tag);

	wr(vm, VIRTIO_MMIO_STATUS, 0);
	/* Fresh rings (a re-initialisation after a reset starts from index 0 again). */
	for (unsigned q = 0; q < 2; q++)
		memset(gmem_ptr(&vm->mem, ring_gpa(q, 0), 0x3000), 0, 0x3000);
	wr(vm, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(vm, VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	wr(vm, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	uint32_t hi = rd(vm, VIRTIO_MMIO_DEVICE_FEATURES);
	check(hi & 1, "device offers VERSION_1", "feature bit 32 missing");
	wr(vm, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(vm, VIRTIO_MMIO_DRIVER_FEATURES, 1);
	wr(vm, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(vm, VIRTIO_MMIO_DRIVER_FEATURES, 0);
	uint32_t s =
		VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER | VIRTIO_CONFIG_S_FEATURES_OK;
	wr(vm, VIRTIO_MMIO_STATUS, s);
	check(rd(vm, VIRTIO_MMIO_STATUS) == s, "FEATURES_OK accepted", "status lost FEATURES_OK");

	for (unsigned q = 0; q < 2; q++) {
		wr(vm, VIRTIO_MMIO_QUEUE_SEL, q);
		wr(vm, VIRTIO_MMIO_QUEUE_NUM, PROBE_QSIZE);
		wr(vm, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)ring_gpa(q, 0));
		wr(vm, VIRTIO_MMIO_QUEUE_DESC_HIGH, 0);
		wr(vm, VIRTIO_MMIO_QUEUE_AVAIL_LOW, (uint32_t)ring_gpa(q, 1));
		wr(vm, VIRTIO_MMIO_QUEUE_AVAIL_HIGH, 0);
		wr(vm, VIRTIO_MMIO_QUEUE_USED_LOW, (uint32_t)ring_gpa(q, 2));
		wr(vm, VIRTIO_MMIO_QUEUE_USED_HIGH, 0);
		wr(vm, VIRTIO_MMIO_QUEUE_READY, 1);
		snprintf(detail, sizeof(detail), "queue %u not ready", q);
		check(rd(vm, VIRTIO_MMIO_QUEUE_READY) == 1,
		      q ? "request queue ready" : "hiprio ready", detail);
	}
	/* DRIVER_OK is where the front end sends SET_FEATURES and sets up both rings
	 * (NUM/BASE/ADDR/KICK/CALL/ENABLE), each acked by the back end. */
	wr(vm, VIRTIO_MMIO_STATUS, s | VIRTIO_CONFIG_S_DRIVER_OK);
	uint32_t st = rd(vm, VIRTIO_MMIO_STATUS);
	snprintf(detail, sizeof(detail), "status 0x%x", st);
	check(st == (s | VIRTIO_CONFIG_S_DRIVER_OK), "DRIVER_OK: rings set up, every step acked",
	      detail);
}

/* One FUSE_INIT through the request queue: proves the back end maps our memfd, reads our
 * rings at the translated addresses, and hears the kick. */
static void probe_fuse_init(struct vm *vm, uint64_t unique)
{
	const uint64_t in_gpa = 0x120000, out_gpa = 0x130000;
	struct vring_desc *desc = gmem_ptr(&vm->mem, ring_gpa(1, 0), 16 * PROBE_QSIZE);
	struct vring_avail *avail = gmem_ptr(&vm->mem, ring_gpa(1, 1), 6 + 2 * PROBE_QSIZE);
	struct vring_used *used = gmem_ptr(&vm->mem, ring_gpa(1, 2), 6 + 8 * PROBE_QSIZE);
	struct {
		struct fuse_in_header h;
		struct fuse_init_in i;
	} in = { 0 };
	struct {
		struct fuse_out_header h;
		struct fuse_init_out o;
	} out;
	char detail[128];

	in.h.len = sizeof(in);
	in.h.opcode = FUSE_INIT;
	in.h.unique = unique;
	in.i.major = FUSE_KERNEL_VERSION;
	in.i.minor = FUSE_KERNEL_MINOR_VERSION;
	gmem_write(&vm->mem, in_gpa, &in, sizeof(in));
	memset(gmem_ptr(&vm->mem, out_gpa, sizeof(out)), 0, sizeof(out));
	desc[0] = (struct vring_desc){ in_gpa, sizeof(in), VRING_DESC_F_NEXT, 1 };
	desc[1] = (struct vring_desc){ out_gpa, sizeof(out), VRING_DESC_F_WRITE, 0 };
	avail->ring[0] = 0;
	__atomic_store_n(&avail->idx, 1, __ATOMIC_RELEASE);
	wr(vm, VIRTIO_MMIO_QUEUE_NOTIFY, 1);

	uint64_t t0 = now_ms();
	while (__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == 0 && now_ms() - t0 < 10000)
		usleep(1000);
	gmem_read(&vm->mem, out_gpa, &out, sizeof(out));
	snprintf(detail, sizeof(detail), "used idx %u, error %d, unique %llu, major %u", used->idx,
		 out.h.error, (unsigned long long)out.h.unique, out.o.major);
	check(used->idx == 1 && out.h.error == 0 && out.h.unique == unique &&
		      out.o.major == FUSE_KERNEL_VERSION,
	      unique == 1 ? "FUSE_INIT round trip through the rings"
			  : "after a device reset and re-initialisation: FUSE_INIT again",
	      detail);
	printf("# FUSE_INIT answered in %llu ms (virtiofsd says FUSE %u.%u)\n",
	       (unsigned long long)(now_ms() - t0), out.o.major, out.o.minor);
}

int main(int argc, char **argv)
{
	struct vm vm;
	struct virtio_devs devs;
	int wired;
	char cmdline[128];
	pid_t victim = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: vhost-user-probe SOCKET [BACKEND-PID-TO-KILL]\n");
		return 2;
	}
	if (argc == 3)
		victim = (pid_t)atoi(argv[2]);
	signal(SIGPIPE, SIG_IGN);
	if (pipe(probe_stop_pipe) || probe_vm(&vm, &wired)) {
		printf("FAIL set-up: cannot create the VM or its RAM\n");
		return 1;
	}
	printf("# transport %s\n",
	       wired ? "wired to KVM (ioeventfd, irqfd)" : "not wired (no KVM)");

	virtio_devs_init(&devs, &vm, PROBE_BASE, 4, PROBE_GSI);
	struct vhost_user_dev_cfg cfg = {
		.type = VHOST_USER_DEV_FS,
		.socket_path = argv[1],
		.name = "virtiofsd (work)",
		.fs_tag = "work",
	};
	int err = virtio_vhost_user_add(&devs, &cfg);
	check(err == 0, "handshake: features, protocol features, SET_OWNER, SET_MEM_TABLE acked",
	      strerror(-err));
	if (err)
		return 1;
	virtio_devs_cmdline(&devs, cmdline, sizeof(cmdline));
	check(strcmp(cmdline, "virtio_mmio.device=4K@0xd0000000:5") == 0, "kernel command line",
	      cmdline);
	if (virtio_devs_watch(&devs, on_stop, NULL))
		return 1;

	probe_driver(&vm);
	probe_fuse_init(&vm, 1);
	/* The driver resets the device (GET_VRING_BASE on both rings) and brings it up again
	 * (the rings restarted with the same kick and call eventfds), as an unbind/bind does. */
	probe_driver(&vm);
	probe_fuse_init(&vm, 2);

	if (victim > 0) {
		char c;
		uint64_t t0 = now_ms();
		kill(victim, SIGKILL);
		/* Generous bound: this is a hang check, not a timing assertion. */
		fd_set rfds;
		FD_ZERO(&rfds);
		FD_SET(probe_stop_pipe[0], &rfds);
		struct timeval tv = { 10, 0 };
		int n = select(probe_stop_pipe[0] + 1, &rfds, NULL, NULL, &tv);
		uint64_t dt = now_ms() - t0;
		check(n == 1 && read(probe_stop_pipe[0], &c, 1) == 1,
		      "killed back end detected by the watcher", "no stop within 10 s");
		check(vm_stopping(&vm.stop) && atomic_load(&vm.stop.status) == VMM_EXIT_BACKEND,
		      "VM stop requested with VMM_EXIT_BACKEND",
		      "vm.stop not set to VMM_EXIT_BACKEND");
		printf("# back end death noticed after %llu ms\n", (unsigned long long)dt);
		/* The guest keeps poking a dead device: a reset needs GET_VRING_BASE, which
		 * must fail cleanly (no hang, no crash, no second message). */
		uint64_t t1 = now_ms();
		wr(&vm, VIRTIO_MMIO_STATUS, 0);
		check(now_ms() - t1 < 10000 && rd(&vm, VIRTIO_MMIO_STATUS) == 0,
		      "reset after back-end death returns", "reset hung or failed");
	}
	virtio_devs_destroy(&devs);
	vm_destroy(&vm);
	return probe_failures ? 1 : 0;
}
