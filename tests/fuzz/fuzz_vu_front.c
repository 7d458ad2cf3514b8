/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_vu_front.c: libFuzzer target for bulkhead-vmm's vhost-user front end
 * (vmm/virtio/vu_front.c, vhost_user_dev.c, lib/vhost_user.c) as a hostile back end answers
 * it: every byte and descriptor the back end sends, through a real socket, while the VMM sets
 * the device up (handshake, memory table) and a driver brings it to DRIVER_OK, toggles a
 * queue, resets and re-initialises it (no KVM: the driver's MMIO goes through the VM's bus).
 *
 * Layout: plan (1 byte: bit 0 virtio-fs else vsock, bit 1 toggle queue 0, bit 2 reset and
 * re-init, bit 3 a 256-entry ring), then chunks { ctl (bits 0-1: how many eventfds ride on
 * the chunk), u16 length (little-endian), bytes }, each sent with one sendmsg before the
 * front end starts; the back end then shuts its sending side. Checked: no crash or sanitizer
 * report, no descriptor left open afterwards (received surplus fds are closed, failures
 * release everything), and a failure stops the VM only with VMM_EXIT_BACKEND. */
#include "lib/vmm_exit.h"
#include "vmm/log.h"
#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/vm.h"

#include <dirent.h>
#include <linux/virtio_config.h>
#include <linux/virtio_mmio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define BASE	  0xd0000000ull
#define RAM_SIZE  (1u << 20)
#define MAX_BYTES (64u << 10)

/* The front end reports every failure in one stderr line; at thousands of inputs a second
 * that is only noise around the sanitizers' reports, so this target keeps them quiet. */
void vmm_log_setup(const char *what, int err, const char *hint)
{
	(void)what;
	(void)err;
	(void)hint;
}

void vmm_log(const char *fmt, ...)
{
	(void)fmt;
}

void vmm_log_bind(struct vm_stop *s)
{
	(void)s;
}

static struct vm vm;
static struct virtio_devs devs;

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		abort();
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static uint32_t rd(uint64_t off)
{
	uint32_t v = 0;
	bus_access(&vm.mmio, BASE + off, false, (uint8_t *)&v, 4);
	return v;
}

static void wr(uint64_t off, uint32_t v)
{
	bus_access(&vm.mmio, BASE + off, true, (uint8_t *)&v, 4);
}

/* Linux's bring-up: every offered feature, both back-end queues on valid rings, DRIVER_OK. */
static void driver_init(unsigned qsize)
{
	uint32_t s = VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER;
	wr(VIRTIO_MMIO_STATUS, 0);
	wr(VIRTIO_MMIO_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	wr(VIRTIO_MMIO_STATUS, s);
	for (uint32_t sel = 0; sel < 2; sel++) {
		wr(VIRTIO_MMIO_DEVICE_FEATURES_SEL, sel);
		uint32_t f = rd(VIRTIO_MMIO_DEVICE_FEATURES);
		wr(VIRTIO_MMIO_DRIVER_FEATURES_SEL, sel);
		wr(VIRTIO_MMIO_DRIVER_FEATURES, f);
	}
	s |= VIRTIO_CONFIG_S_FEATURES_OK;
	wr(VIRTIO_MMIO_STATUS, s);
	for (uint32_t q = 0; q < 2; q++) {
		uint64_t ring = 0x10000ull + q * 0x10000ull;
		wr(VIRTIO_MMIO_QUEUE_SEL, q);
		wr(VIRTIO_MMIO_QUEUE_NUM, qsize);
		wr(VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)ring);
		wr(VIRTIO_MMIO_QUEUE_AVAIL_LOW, (uint32_t)ring + 0x4000);
		wr(VIRTIO_MMIO_QUEUE_USED_LOW, (uint32_t)ring + 0x8000);
		wr(VIRTIO_MMIO_QUEUE_READY, 1);
	}
	wr(VIRTIO_MMIO_STATUS, s | VIRTIO_CONFIG_S_DRIVER_OK);
}

/* Sends the chunks as the back end; returns after shutting its sending side. */
static void backend_says(int be, const uint8_t *data, size_t size)
{
	size_t total = 0;
	while (size >= 3 && total < MAX_BYTES) {
		unsigned nfds = data[0] & 3;
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;
		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (len == 0)
			continue;
		union {
			char buf[CMSG_SPACE(3 * sizeof(int))];
			struct cmsghdr align;
		} c;
		int fds[3];
		struct iovec iov = { (void *)data, len };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		for (unsigned i = 0; i < nfds; i++)
			fds[i] = eventfd(0, EFD_CLOEXEC);
		if (nfds) {
			memset(&c, 0, sizeof(c));
			mh.msg_control = c.buf;
			mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
			struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
			h->cmsg_level = SOL_SOCKET;
			h->cmsg_type = SCM_RIGHTS;
			h->cmsg_len = CMSG_LEN(nfds * sizeof(int));
			memcpy(CMSG_DATA(h), fds, nfds * sizeof(int));
		}
		ssize_t n = sendmsg(be, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]); /* in flight, they are the front end's now */
		if (n < 0)
			break;
		data += len;
		size -= len;
		total += len;
	}
	shutdown(be, SHUT_WR);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		if (vm_create_nokvm(&vm, RAM_SIZE))
			abort();
		ready = true;
	}
	if (size < 1)
		return 0;
	uint8_t plan = data[0];
	int before = open_fds();
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
		abort();
	int big = 1 << 20;
	setsockopt(sp[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	backend_says(sp[1], data + 1, size - 1);

	bus_init(&vm.mmio, "MMIO");
	virtio_devs_init(&devs, &vm, BASE, 1, 5);
	struct vhost_user_dev_cfg cfg = {
		.type = (plan & 1) ? VHOST_USER_DEV_FS : VHOST_USER_DEV_VSOCK,
		.socket_fd = sp[0], /* owned by the device from here on */
		.name = "fuzz",
		.fs_tag = "work",
		.vsock_cid = 3,
		.timeout_ms = 1000, /* never reached: the back end said all it will say */
	};
	if (virtio_vhost_user_add(&devs, &cfg) == 0) {
		unsigned qsize = (plan & 8) ? 256 : 8;
		driver_init(qsize);
		if (plan & 2) {
			wr(VIRTIO_MMIO_QUEUE_SEL, 0);
			wr(VIRTIO_MMIO_QUEUE_READY, 0);
			wr(VIRTIO_MMIO_QUEUE_READY, 1);
		}
		if (plan & 4)
			driver_init(qsize);
		wr(VIRTIO_MMIO_STATUS, 0);
	}
	virtio_devs_destroy(&devs);
	close(sp[1]);

	int status = atomic_load(&vm.stop.status);
	if (status != VM_STOP_UNCLAIMED && status != VMM_EXIT_BACKEND)
		abort();
	if (open_fds() != before)
		abort(); /* a descriptor the back end sent, or one of ours, was left open */
	/* The next input starts with a running VM again. */
	eventfd_t v;
	(void)eventfd_read(vm.stop.fd, &v);
	atomic_store(&vm.stop.requested, false);
	atomic_store(&vm.stop.status, VM_STOP_UNCLAIMED);
	return 0;
}
