/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/seccomp.h: bulkhead-vsock's system-call allow-list, installed once its sockets and
 * event loop are set up and before the front end's first message (so before any guest
 * byte). Anything else kills the process (SIGSYS), except a few calls that fail instead:
 * opening files (EACCES), sockets other than AF_UNIX (EAFNOSUPPORT), unlink (EPERM). */
#ifndef BULKHEAD_VSOCK_SECCOMP_H
#define BULKHEAD_VSOCK_SECCOMP_H

/* Returns 0 or -errno. */
int vsock_seccomp_install(void);

#endif
