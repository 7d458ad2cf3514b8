/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/guest-tools/snap_init.c: /init of a Linux guest that is saved and restored mid-run
 * (tests/e2e/test_vmm_snapshot.sh, bench/nested-snapshot.sh): the console is its only device.
 * Static, so the initramfs needs nothing else.
 *
 * Prints "snapinit: ready", then TICKS lines "snapinit: tick N mono-ok|mono-back", TICK_MS
 * apart: each wait is a timer interrupt (the LAPIC timer, through the irqchip), and each line
 * says whether CLOCK_MONOTONIC went forward since the last. A page of state changes every
 * tick. Then "snapinit: done SUM" (SUM depends only on the ticks) and a reboot, which ends
 * the VM with status 0. With the word "first" on the kernel command line (init's argv[1]) it prints
 * one line and reboots at once: a boot's cost to the first byte, for the bench.
 */
#include <errno.h>
#include <sys/socket.h> /* before vm_sockets.h: older kernel headers need sockaddr */
#include <linux/vm_sockets.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/reboot.h>
#include <time.h>
#include <unistd.h>

#define TICKS	30
#define TICK_MS 50

static uint64_t state[512];

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One connection at a time; returns only by rebooting. */
static void serve_vsock(void)
{
	struct sockaddr_vm a = { .svm_family = AF_VSOCK,
				 .svm_cid = VMADDR_CID_ANY,
				 .svm_port = 5000 };
	int l = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0), c = -1;
	char buf[256];
	size_t have = 0;

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0) {
		printf("snapinit: vsock listen failed: %s\n", strerror(errno));
		reboot(RB_AUTOBOOT);
	}
	printf("snapinit: listening\n");
	for (;;) {
		struct pollfd p[2] = { { .fd = l, .events = POLLIN },
				       { .fd = c, .events = POLLIN } };
		if (poll(p, 2, TICK_MS) < 0)
			continue;
		if (p[0].revents & POLLIN) {
			int n = accept4(l, NULL, NULL, SOCK_CLOEXEC);
			if (n >= 0 && c >= 0) {
				close(n);
			} else if (n >= 0) {
				c = n;
				have = 0;
				printf("snapinit: conn accepted\n");
			}
		}
		if (c < 0 || !p[1].revents)
			continue;
		/* A transport reset leaves ECONNRESET in SO_ERROR (reads then fail with
		 * ENOTCONN); a peer's RST or shutdown reads as an end (0). */
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		getsockopt(c, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		ssize_t r = soerr ? -1 : read(c, buf + have, sizeof(buf) - 1 - have);
		if (soerr)
			errno = soerr;
		if (r <= 0) {
			printf("snapinit: conn %s\n", r < 0 && errno == ECONNRESET ? "reset"
						      : r < 0			   ? strerror(errno)
										   : "closed");
			close(c);
			c = -1;
			continue;
		}
		have += (size_t)r;
		buf[have] = '\0';
		char *nl = strchr(buf, '\n');
		if (!nl && have < sizeof(buf) - 1)
			continue;
		if (nl)
			*nl = '\0';
		dprintf(c, "echo: %s\n", buf);
		if (strcmp(buf, "quit") == 0) {
			printf("snapinit: done vsock\n");
			reboot(RB_AUTOBOOT);
		}
		have = 0;
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	/* The kernel hands init the command line's plain words (no '=' or '.'; not after a
	 * "--": a VMM appends its devices to the line). */
	if (argc > 1 && strcmp(argv[1], "first") == 0) {
		printf("snapinit: first byte\n");
		reboot(RB_AUTOBOOT);
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "vsock") == 0)
		serve_vsock();
	printf("snapinit: ready\n");
	uint64_t last = mono_ns(), sum = 0x9e3779b97f4a7c15ULL;
	for (unsigned t = 1; t <= TICKS; t++) {
		struct timespec d = { 0, TICK_MS * 1000000L };
		while (nanosleep(&d, &d) != 0)
			;
		uint64_t now = mono_ns();
		for (unsigned i = 0; i < 512; i++) {
			state[i] = state[i] * 6364136223846793005ULL + t + i;
			sum ^= state[i] + (sum << 7) + (sum >> 3);
		}
		printf("snapinit: tick %u %s\n", t, now > last ? "mono-ok" : "mono-back");
		last = now;
	}
	printf("snapinit: done %llu\n", (unsigned long long)sum);
	reboot(RB_AUTOBOOT);
	return 1;
}
