/* SPDX-License-Identifier: Apache-2.0 */
/* lib/errbuf.h: set-up errors as one line in the caller's buffer (`char *err, size_t errlen`,
 * the convention of the loaders and the vault), written by one helper. */
#ifndef BULKHEAD_LIB_ERRBUF_H
#define BULKHEAD_LIB_ERRBUF_H

#include <stddef.h>

/* Formats the message into ERR; nothing when ERR is NULL or ERRLEN 0. */
void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same, returning RC: `return errbuf_fail(err, errlen, -EINVAL, "...", ...);`. */
int errbuf_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
