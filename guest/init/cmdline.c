/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/cmdline.c: the kernel command line's bulkhead.* parameters
 * (lib/boot_args.h), read once; a restored template's
 * come from its host instead (template.c). */
#include "guest/init/init.h"
#include "lib/boot_args.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static char cmdline[BOOT_ARGS_CMDLINE_MAX + 1];
static bool loaded;

int cmdline_replace(const char *args)
{
	size_t n = strlen(args);
	if (n >= sizeof(cmdline))
		return -E2BIG;
	memcpy(cmdline, args, n + 1);
	loaded = true;
	return 0;
}

int cmdline_param(const char *name, const char **val, size_t *len)
{
	if (!loaded) {
		int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		ssize_t n = read(fd, cmdline, sizeof(cmdline) - 1);
		int e = errno;
		close(fd);
		if (n < 0)
			return -e;
		cmdline[n] = '\0';
		loaded = true;
	}
	size_t nlen = strlen(name);
	for (const char *p = cmdline; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		size_t tlen = strcspn(p, " \n");
		if (tlen > nlen && strncmp(p, name, nlen) == 0) {
			*val = p + nlen;
			*len = tlen - nlen;
			return 1;
		}
		p += tlen;
	}
	return 0;
}
