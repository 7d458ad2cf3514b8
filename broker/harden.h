/* SPDX-License-Identifier: Apache-2.0 */
/* broker/harden.h: the broker's lock-down, once its vault, rules and TLS context are loaded and
 * before the first guest byte. The broker must talk to the network, resolve names, write its
 * audit log and answer its control socket, so it is not jailed like the VM's processes; but a
 * bug in its parsing of guest HTTP must not become a shell next to the secrets: no new process
 * or program, no ptrace or core dump of it, no privilege, mount, namespace, module, BPF,
 * keyring or io_uring call (a seccomp deny-list, each kills the process), no_new_privs. */
#ifndef BULKHEAD_BROKER_HARDEN_H
#define BULKHEAD_BROKER_HARDEN_H

/* Applies it to the whole process, every thread included. 0 or -errno. */
int harden_lock_down(void);

#endif
