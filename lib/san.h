/* SPDX-License-Identifier: Apache-2.0 */
/* lib/san.h: what a sanitizer build (make SAN=..., which defines BULKHEAD_SANITIZED) needs in
 * the programs that lock themselves down with seccomp (bulkhead-vmm, bulkhead-vsock): the
 * sanitizer runtime's own system calls in their allow-lists, and run-time defaults (lib/san.c,
 * linked into those two only in that build). A normal build uses none of it. */
#ifndef BULKHEAD_LIB_SAN_H
#define BULKHEAD_LIB_SAN_H

#include <stdbool.h>
#include <string.h>

#ifdef BULKHEAD_SANITIZED
#include <seccomp.h>

/* Adds to an allow-list what libasan and libubsan call after start-up, each with its reason
 * (lib/san.c). For every thread role: the runtime runs on all of them. Returns 0 or -errno. */
int san_seccomp_allow(scmp_filter_ctx ctx);
#endif

/* Whether a helper's diagnostic line is the sanitizer runtime's own ("==PID==WARNING: ...",
 * which a jailed helper's runtime prints at a time of its own), not the helper's words: a
 * line reporting why a helper stopped looks past it. Always false in a normal build. */
static inline bool san_runtime_line(const char *line)
{
#ifdef BULKHEAD_SANITIZED
	size_t digits = strncmp(line, "==", 2) == 0 ? strspn(line + 2, "0123456789") : 0;
	return digits > 0 && strncmp(line + 2 + digits, "==", 2) == 0;
#else
	(void)line;
	return false;
#endif
}

#endif
