/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/setup.c: the file systems and settings every session starts with. */
#include "guest/init/init.h"
#include "lib/boot_args.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

struct mnt {
	const char *src, *dir, *type;
	unsigned long flags;
	const char *data;
};

static const struct mnt mounts[] = {
	{ "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL },
	{ "sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL },
	{ "devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755" },
	{ "devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "ptmxmode=0666,mode=0620" },
	{ "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" },
	{ "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" },
	{ "tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755" },
};

int setup_system(void)
{
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		const struct mnt *m = &mounts[i];
		if (mkdir(m->dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		/* devtmpfs may already be there (CONFIG_DEVTMPFS_MOUNT). */
		if (mount(m->src, m->dir, m->type, m->flags, m->data) < 0 && errno != EBUSY)
			return -errno;
	}
	/* Only emergencies on the console from now on: frames share the UART with
	 * printk, and a message inside a frame would fail the session. Everything
	 * still reaches the kernel log. */
	klogctl(8 /* SYSLOG_ACTION_CONSOLE_LEVEL */, NULL, 1);
	return 0;
}

int setup_hostname(void)
{
	/* bulkhead.hostname=NAME (an OCI bundle's hostname), checked as the host did. */
	const char *name = "bulkhead";
	size_t len = strlen(name);
	if (cmdline_param(BOOT_ARGS_HOSTNAME, &name, &len) > 0) {
		for (size_t i = 0; i < len; i++)
			if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
				len = 0;
		if (len == 0 || len > BOOT_ARGS_HOSTNAME_MAX)
			return -EINVAL;
	}
	if (sethostname(name, len) < 0)
		return -errno;
	return 0;
}
