/* guest/init/main.c: bulkhead-init, PID 1 of every guest: set up, run the
 * session's command, report its status to the host, power off. */
#include "guest/init/init.h"
#include "lib/console_frame.h"
#include "vmm/boot_timer_abi.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/io.h>
#include <sys/reboot.h>
#include <sys/wait.h>
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

static void report_status(int status, int exit_code)
{
	char msg[32];
	int n;
	if (status == -1)
		n = snprintf(msg, sizeof(msg), "exit %d", exit_code);
	else if (WIFSIGNALED(status))
		n = snprintf(msg, sizeof(msg), "signal %d", WTERMSIG(status));
	else
		n = snprintf(msg, sizeof(msg), "exit %d", WEXITSTATUS(status));
	console_send(CFRAME_EXIT, msg, (size_t)n);
}

/* The boot timer (vmm/boot_timer_abi.h): bulkhead-vmm timestamps this write as "init
 * started". Other VMMs ignore the port; without I/O privilege (not PID 1 in a VM) skip it. */
static void boot_timer_mark(void)
{
	if (ioperm(BOOT_TIMER_PORT, 1, 1) == 0) {
		outb(BOOT_TIMER_MAGIC, BOOT_TIMER_PORT);
		ioperm(BOOT_TIMER_PORT, 1, 0);
	}
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

	struct session s;
	if (session_from_cmdline(&s) < 0) {
		console_error("bulkhead-init: no valid command on the kernel command line");
		init_poweroff();
	}
	int merr = session_mount_work(&s);
	if (merr < 0) {
		console_error("bulkhead-init: cannot mount the work share at /work: %s",
			      strerror(-merr));
		init_poweroff();
	}
	if (s.agent) {
		agent_run();
		init_poweroff();
	}
	int exit_code = 0;
	int status = session_run(&s, &exit_code);
	/* Flush before reporting: the host may stop the VM as soon as it has the status. */
	sync();
	if (status != -1 || exit_code >= 0)
		report_status(status, exit_code);
	init_poweroff();
}
