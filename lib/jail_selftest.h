/* SPDX-License-Identifier: Apache-2.0 */
/* lib/jail_selftest.h: the jail's test hook shared by bulkhead-vsock and bulkhead-vmm
 * (--jail-selftest): "selftest: ..." lines on stderr that tests/e2e/test_jail.sh and
 * tests/e2e/test_vmm_jail.sh parse. The format is a contract with those tests. */
#ifndef BULKHEAD_LIB_JAIL_SELFTEST_H
#define BULKHEAD_LIB_JAIL_SELFTEST_H

/* Before the allow-list: uid, pid, capability sets, no_new_privs, open descriptors and
 * the root directory's entries, all from system calls (an empty root has no /proc). */
void jail_selftest_report(void);

/* After the allow-list is in place on the calling thread: opening /etc/passwd and an
 * AF_INET socket (both must fail cleanly), then a call outside the list (getppid), which
 * must kill the process with SIGSYS. Returns only if it did not ("still alive" line). */
void jail_selftest_probe(void);

#endif
