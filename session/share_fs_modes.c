/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_fs_modes.c: what virtiofsd may not do to the host's files on the guest's behalf,
 * whatever it is asked: set the set-user-ID or set-group-ID bit, or make a file writable by
 * others. virtiofsd runs as the share's owner (session/share_fs.c), so a guest that could chmod
 * 6755 would leave a program on the host that runs as that owner for anyone who starts it (as
 * root for a root-owned share), and one that could chmod 777 would let any host user change
 * what the owner later runs (a git hook). A seccomp filter installed before virtiofsd starts
 * (inherited by its sandbox, and stacked under its own) refuses, with EPERM, every call that
 * would create a file or change a mode with any of those bits (the guest kernel has applied
 * its umask to a create's mode already); everything else is left to virtiofsd's own filter.
 * openat2 carries its mode in a struct no filter can read, so it answers ENOSYS (virtiofsd
 * falls back). */
#include "session/share_fs.h"

#include <errno.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>

/* The mode argument's position in each call that takes one. */
static const struct {
	const char *name;
	unsigned arg;
} mode_calls[] = {
	{ "chmod", 1 },	  { "fchmod", 1 }, { "fchmodat", 2 }, { "fchmodat2", 2 },
	{ "open", 2 },	  { "openat", 3 }, { "creat", 1 },    { "mknod", 1 },
	{ "mknodat", 2 }, { "mkdir", 1 },  { "mkdirat", 2 },
};

int share_fs_forbid_setid(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc = ctx ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < sizeof(mode_calls) / sizeof(mode_calls[0]); i++) {
		int nr = seccomp_syscall_resolve_name(mode_calls[i].name);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a call of this architecture (or this libseccomp) */
		const scmp_datum_t bits[] = { S_ISUID, S_ISGID, S_IWOTH };
		for (size_t b = 0; !rc && b < sizeof(bits) / sizeof(bits[0]); b++)
			rc = seccomp_rule_add(
				ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
				SCMP_CMP(mode_calls[i].arg, SCMP_CMP_MASKED_EQ, bits[b], bits[b]));
	}
	int nr = seccomp_syscall_resolve_name("openat2");
	if (!rc && nr != __NR_SCMP_ERROR)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	if (!rc && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		rc = -errno;
	if (!rc)
		rc = seccomp_load(ctx);
	if (ctx)
		seccomp_release(ctx);
	return rc;
}
