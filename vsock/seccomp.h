/* vsock/seccomp.h: bulkhead-vsock's system-call allow-list, installed once its sockets and
 * event loop are set up and before the front end's first message (so before any guest
 * byte). Anything else kills the process (SIGSYS), except a few calls that fail instead:
 * opening files (EACCES), sockets other than AF_UNIX (EAFNOSUPPORT), unlink (EPERM). */
#ifndef BULKHEAD_VSOCK_SECCOMP_H
#define BULKHEAD_VSOCK_SECCOMP_H

/* Returns 0 or -errno. */
int vsock_seccomp_install(void);

/* The jail's test hook (--jail-selftest): reports on stderr what the process can see and
 * do — uid, capabilities, descriptors before the filter; opening /etc/passwd and an AF_INET
 * socket after — then makes a call outside the list, which must kill it with SIGSYS. */
void vsock_jail_selftest_before(void);
void vsock_jail_selftest_after(void);

#endif
