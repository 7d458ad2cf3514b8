/* SPDX-License-Identifier: Apache-2.0 */
/* lib/stdfds.c: see stdfds.h. */
#include "lib/stdfds.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int stdfds_ensure(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free number: this one, as the ones below it are open. */
		int got = open("/dev/null", O_RDWR);
		if (got != fd) {
			if (got >= 0)
				close(got);
			return -1;
		}
	}
	return 0;
}
