/* SPDX-License-Identifier: Apache-2.0 */
/* lib/errbuf.c: one-line errors into the caller's buffer (see errbuf.h). */
#include "lib/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

static void errbuf_vset(char *err, size_t errlen, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void errbuf_vset(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
}

void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errbuf_vset(err, errlen, fmt, ap);
	va_end(ap);
}

int errbuf_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errbuf_vset(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}
