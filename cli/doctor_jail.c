/* SPDX-License-Identifier: Apache-2.0 */
/* cli/doctor_jail.c: `bulkhead doctor`'s jail and cgroups facts, and their lines. The jail is tried
 * for real: a static program of ours (bulkhead-vsock --help) started through jail_spawn exactly as
 * a session starts its back end, in an empty root with the ids a session would get; and the session
 * cgroups are created with a session's limits and removed. Either one failing says where, in one
 * line, since a session would fail (jail) or run unbounded (cgroups) there. */
#include "cli/doctor.h"
#include "jail/cgroup.h"
#include "jail/jail.h"
#include "session/paths.h"

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

void doctor_jail_find(json_t *facts)
{
	struct jail_ids ids = JAIL_IDS_INIT;
	char why[512];

	if (jail_ids_acquire(&ids, NULL, why, sizeof(why)) < 0 ||
	    try_jail(&ids, why, sizeof(why)) < 0)
		json_object_set_new(facts, "jail",
				    json_pack("{s:b, s:n, s:n, s:s}", "works", 0, "per_session_uid",
					      "uid", "why", why));
	else /* as root, each session leases a uid of its own; else ours is the one mapped */
		json_object_set_new(
			facts, "jail",
			json_pack("{s:b, s:b, s:I, s:n}", "works", 1, "per_session_uid",
				  ids.lease_fd >= 0, "uid",
				  (json_int_t)(ids.lease_fd >= 0 ? JAIL_UID_FIRST : ids.uid),
				  "why"));
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
		json_object_set_new(facts, "cgroups",
				    json_pack("{s:n, s:s}", "version", "why", why));
	else
		json_object_set_new(facts, "cgroups",
				    json_pack("{s:i, s:n}", "version", cg.version, "why"));
	cgroup_destroy(&cg, NULL, 0);
}

void doctor_jail_say(const json_t *facts)
{
	const json_t *j = json_object_get(facts, "jail"), *c = json_object_get(facts, "cgroups");
	unsigned uid = (unsigned)json_integer_value(json_object_get(j, "uid"));

	if (!json_is_true(json_object_get(j, "works")))
		printf("jail: broken (%s): sessions cannot start here; --no-jail is for debugging "
		       "only\n",
		       doctor_str(j, "why", ""));
	else if (json_is_true(json_object_get(j, "per_session_uid")))
		printf("jail: works (each session its own uid from %u, empty root, own namespaces, "
		       "no capabilities)\n",
		       uid);
	else
		printf("jail: works (not root: a user namespace mapping only uid %u, empty root, "
		       "own namespaces, no capabilities)\n",
		       uid);

	if (json_is_integer(json_object_get(c, "version")))
		printf("cgroups: v%d (memory, pids and CPU limits per session)\n",
		       (int)json_integer_value(json_object_get(c, "version")));
	else
		printf("cgroups: none usable (%s): sessions run without memory, pids or CPU "
		       "limits\n",
		       doctor_str(c, "why", ""));
}
