/* guest/init/work.c: the work share — whether the host gave one (bulkhead.work=
 * on the kernel command line), and mounting it at /work. */
#include "guest/init/init.h"
#include "lib/boot_args.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* The value of "name" among the space-separated parameters; its length, 0 if absent. */
static size_t find_param(const char *cmdline, const char *name, const char **val)
{
	size_t nlen = strlen(name);
	for (const char *p = cmdline; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		size_t tlen = strcspn(p, " \n");
		if (tlen > nlen && strncmp(p, name, nlen) == 0) {
			*val = p + nlen;
			return tlen - nlen;
		}
		p += tlen;
	}
	return 0;
}

int work_mount(void)
{
	char cmdline[BOOT_ARGS_CMDLINE_MAX + 1];
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, cmdline, sizeof(cmdline) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	cmdline[n] = '\0';

	const char *val;
	size_t len = find_param(cmdline, BOOT_ARGS_WORK, &val);
	if (len == 0)
		return 0;
	if (len != 2 || (strncmp(val, "rw", 2) != 0 && strncmp(val, "ro", 2) != 0))
		return -EINVAL;
	if (mkdir("/work", 0755) < 0 && errno != EEXIST)
		return -errno;
	/* The read-only flag here only gives early, clear errors; the host enforces :ro
	 * whatever the guest does with its mounts. */
	unsigned long flags = MS_NOSUID | MS_NODEV | (val[1] == 'o' ? MS_RDONLY : 0);
	if (mount("work", "/work", "virtiofs", flags, NULL) < 0)
		return -errno;
	return 1;
}
