/* SPDX-License-Identifier: Apache-2.0 */
/* lib/signame.h: signal names (lib/signame.c). */
#ifndef BULKHEAD_LIB_SIGNAME_H
#define BULKHEAD_LIB_SIGNAME_H

/* The signal's number (a name with or without "SIG", any case; a decimal number; RTMIN+N), or
 * 0 when it names none. */
int signame_parse(const char *s);

#endif
