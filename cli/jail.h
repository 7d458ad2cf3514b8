/* cli/jail.h: the jail step for the processes that touch guest data (bulkhead-vsock, later
 * bulkhead-vmm): started in fresh PID, network, IPC and UTS namespaces (and a user namespace
 * when not root), with no capabilities (bounding set emptied, root's exec-time caps refused
 * by securebits), no_new_privs, an empty environment, only the descriptors it is given, and
 * tight rlimits (no core dumps, no file writes, few descriptors). The process then installs
 * its own seccomp allow-list once it is set up (vsock/seccomp.c), before the guest's first
 * byte. Not yet: an empty root (pivot_root), another uid, cgroups. */
#ifndef BULKHEAD_CLI_JAIL_H
#define BULKHEAD_CLI_JAIL_H

#include <stdbool.h>
#include <sys/types.h>

/* Like fork() but the child is in the new namespaces (pid 1 of its PID namespace), with a
 * mount namespace of its own if MOUNT_NS. Returns the child's pid in the parent, 0 in the
 * child, or -errno. */
pid_t jail_fork(bool mount_ns);

/* In a child with its own mount namespace, once it needs nothing more from the host's file
 * tree: its root becomes an empty read-only tmpfs holding only DIR (bound at the same path,
 * writable). EXE is opened first, for jail_exec: the program must be static, as there is no
 * loader inside. Returns 0 or -errno. */
int jail_root(const char *dir, const char *exe);

/* In the child, just before exec: drops every capability for good, sets no_new_privs and
 * the rlimits (files may not grow unless FILE_WRITES: a VM process sizes its guest RAM's
 * memfd). Returns 0 or
 * -errno. */
int jail_lock(bool file_writes);

/* execve with an empty environment (the program opened by jail_fork when it made an empty
 * root). Returns only on failure. */
void jail_exec(char *const argv[]);

#endif
