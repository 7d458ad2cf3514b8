/* vmm/log.c: one line per message so callers (doctor, run, tests) can parse stderr. */
#include "vmm/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void vmm_log_setup(const char *what, int err, const char *hint)
{
	if (err > 0)
		fprintf(stderr, "bulkhead-vmm: %s: %s%s%s\n", what, strerror(err), hint ? "; " : "",
			hint ? hint : "");
	else
		fprintf(stderr, "bulkhead-vmm: %s%s%s\n", what, hint ? "; " : "", hint ? hint : "");
}

void vmm_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write keeps the line whole when stderr is shared with other writers. */
	fprintf(stderr, "bulkhead-vmm: %s\n", line);
}
