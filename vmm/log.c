/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/log.c: one line per message so callers (doctor, run, tests) can parse stderr. */
#include "vmm/log.h"

#include "vmm/stopwait.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct vm_stop *vmm_log_stop;

void vmm_log_bind(struct vm_stop *stop)
{
	vmm_log_stop = stop;
}

/* One write keeps the line whole when stderr is shared with other writers. */
static void vmm_log_line(const char *line)
{
	char buf[640];
	int n = snprintf(buf, sizeof(buf), "bulkhead-vmm: %s\n", line);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	if (len && buf[len - 1] != '\n')
		buf[len - 1] = '\n';
	stopwait_write(vmm_log_stop, STDERR_FILENO, buf, len);
}

void vmm_log_setup(const char *what, int err, const char *hint)
{
	char line[512];
	if (err > 0)
		snprintf(line, sizeof(line), "%s: %s%s%s", what, strerror(err), hint ? "; " : "",
			 hint ? hint : "");
	else
		snprintf(line, sizeof(line), "%s%s%s", what, hint ? "; " : "", hint ? hint : "");
	vmm_log_line(line);
}

void vmm_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	vmm_log_line(line);
}
