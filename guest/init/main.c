/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/main.c: bulkhead-init, PID 1 of every guest: set up, serve the
 * host's execs through the vsock agent, power off when the host is done. */
#include "guest/init/init.h"
#include "lib/boot_args.h"
#include "lib/boot_timer_abi.h"
#include "lib/console_frame.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#if defined(__x86_64__)
#include <sys/io.h>
#endif
#include <unistd.h>

void init_poweroff(void)
{
	kill(-1, SIGKILL);
	sync();
	/* The VMM (or QEMU with -no-reboot) turns a reboot into the VM's exit. */
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

/* The boot timer (lib/boot_timer_abi.h): bulkhead-vmm timestamps this write as "init
 * started". Other VMMs ignore the port; without I/O privilege (not PID 1 in a VM) skip it.
 * arm64 has no port I/O: there the guest's own uptime at /init is the measure. */
static void boot_timer_mark(void)
{
#if defined(__x86_64__)
	if (ioperm(BOOT_TIMER_PORT, 1, 1) == 0) {
		outb(BOOT_TIMER_MAGIC, BOOT_TIMER_PORT);
		ioperm(BOOT_TIMER_PORT, 1, 0);
	}
#endif
}

int main(void)
{
	if (getpid() == 1)
		boot_timer_mark(); /* first: everything after it is session time, not boot */
	if (getpid() != 1) {
		fprintf(stderr, "bulkhead-init: runs only as PID 1 of a bulkhead guest\n");
		return 1;
	}
	int err = setup_system();
	/* Without devtmpfs there is no ttyS0 node; the host then sees no frame and
	 * reports the unfinished session with the console log. */
	int cerr = console_open("/dev/ttyS0");
	if (cerr < 0) {
		fprintf(stderr, "bulkhead-init: cannot open /dev/ttyS0: %s\n", strerror(-cerr));
		init_poweroff();
	}
	if (err < 0) {
		console_error("bulkhead-init: system set-up failed: %s", strerror(-err));
		init_poweroff();
	}
	/* A template waits here for the session it becomes once restored (template.c). */
	if (template_wait() < 0)
		init_poweroff(); /* the reason went out as a frame */
	if ((err = setup_hostname()) < 0) {
		console_error("bulkhead-init: cannot set the hostname: %s", strerror(-err));
		init_poweroff();
	}
	/* The image's last entry: without it the kernel ran out of memory unpacking. */
	char image[16];
	if (readlink("/etc/bulkhead-image", image, sizeof(image)) <= 0) {
		console_error(
			"bulkhead-init: the guest image was only partly unpacked: it does not "
			"fit in the guest's memory (give more with --mem)");
		init_poweroff();
	}

	int ierr = image_mount();
	if (ierr < 0) {
		console_error("bulkhead-init: cannot mount the image at %s: %s",
			      BOOT_ARGS_IMAGE_DIR, strerror(-ierr));
		init_poweroff();
	}
	int werr = work_mount();
	if (werr < 0) {
		console_error("bulkhead-init: cannot mount the work share: %s",
			      strerror(-werr));
		init_poweroff();
	}
	int berr = binds_mount();
	if (berr < 0) {
		console_error("bulkhead-init: cannot mount a bind share: %s", strerror(-berr));
		init_poweroff();
	}
	int perr = proxy_shim_start();
	if (perr < 0) {
		console_error("bulkhead-init: cannot start the proxy shim: %s", strerror(-perr));
		init_poweroff();
	}
	if (proxy_trust_session_ca() < 0)
		init_poweroff(); /* the reason went out as a frame */
	/* Serve execs until the host ends the session, then power off. */
	agent_run();
	init_poweroff();
}
