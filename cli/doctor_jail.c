/* SPDX-License-Identifier: Apache-2.0 */
/* cli/doctor_jail.c: `bulkhead doctor`'s jail and cgroup lines. The jail is tried for real: a
 * static program of ours (bulkhead-vsock --help) started through jail_spawn exactly as a
 * session starts its back end, in an empty root with the ids a session would get; and the
 * session cgroups are created with a session's limits and removed. Either one failing says
 * where, in one line, since a session would fail (jail) or run unbounded (cgroups) there. */
#include "cli/doctor.h"
#include "jail/cgroup.h"
#include "jail/jail.h"
#include "cli/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* 0 when the jailed program ran and exited 0; else -1 with the jail's own message. */
static int try_jail(struct jail_ids *ids, char *why, size_t whylen)
{
	char bin[PATH_MAX], diag[512];
	int p[2];

	if (paths_join(bin, sizeof(bin), paths_bindir(), "bulkhead-vsock") < 0 ||
	    access(bin, X_OK) < 0) {
		snprintf(why, whylen, "bulkhead-vsock not found next to bulkhead (run make)");
		return -1;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	char *const argv[] = { bin, "--help", NULL };
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	const struct jail_spec spec = {
		.ids = ids,
		.empty_root = true,
		.extra_gid = (gid_t)-1,
		.out_fd = devnull,
		.diag_fd = p[1],
	};
	pid_t pid = devnull < 0 ? -EBADF : jail_spawn(argv, &spec);
	close(p[1]);
	if (devnull >= 0)
		close(devnull);
	ssize_t n = pid < 0 ? 0 : read(p[0], diag, sizeof(diag) - 1);
	close(p[0]);
	diag[n > 0 ? n : 0] = '\0';
	diag[strcspn(diag, "\n")] = '\0';
	int st = 0;
	if (pid < 0) {
		snprintf(why, whylen, "cannot start a jailed process: %s", strerror((int)-pid));
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	snprintf(why, whylen, "%s", diag[0] ? diag : "the jailed process failed");
	return -1;
}

int doctor_print_jail(void)
{
	struct jail_ids ids = JAIL_IDS_INIT;
	char why[512];
	int rc = 0;

	if (jail_ids_acquire(&ids, NULL, why, sizeof(why)) < 0 ||
	    try_jail(&ids, why, sizeof(why)) < 0) {
		printf("jail: broken (%s): sessions cannot start here; --no-jail is for debugging "
		       "only\n",
		       why);
		rc = -1;
	} else if (ids.lease_fd >= 0) {
		printf("jail: works (each session its own uid from %u, empty root, own namespaces, "
		       "no capabilities)\n",
		       JAIL_UID_FIRST);
	} else {
		printf("jail: works (not root: a user namespace mapping only uid %u, empty root, "
		       "own "
		       "namespaces, no capabilities)\n",
		       (unsigned)ids.uid);
	}
	jail_ids_release(&ids);

	/* The limits a default session (256 MiB, 1 vCPU) would get. */
	struct session_cgroup cg = { .version = 0 };
	const struct cgroup_limits lim = {
		.mem_bytes = (256ULL + CGROUP_OVERHEAD_MIB) << 20,
		.pids = CGROUP_DEFAULT_PIDS,
		.cpus = 1,
	};
	char id[32];
	snprintf(id, sizeof(id), "doctor-%ld", (long)getpid());
	if (cgroup_create(&cg, id, &lim, why, sizeof(why)) < 0)
		printf("cgroups: none usable (%s): sessions run without memory, pids or CPU "
		       "limits\n",
		       why);
	else
		printf("cgroups: v%d (memory, pids and CPU limits per session)\n", cg.version);
	cgroup_destroy(&cg);
	return rc;
}
