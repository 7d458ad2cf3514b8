/* SPDX-License-Identifier: Apache-2.0 */
/* oci/control.c: `state`, `list`, `kill` and `delete`. A signal is sent to the session's
 * supervisor, which passes it to the command in the guest; KILL cannot be passed on, so it
 * ends the supervisor and every process of the session (its cgroups) at once. delete removes
 * whatever a session killed that way left: its run directory and cgroups, then the state. */
#include "jail/proc.h"
#include "session/session_reap.h"
#include "lib/signame.h"
#include "session/rundir.h"
#include "oci/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int oci_state(const struct oci_globals *g, int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		oci_error(g, "usage: state ID");
		return 1;
	}
	struct oci_container c;
	char err[320];
	if (oci_container_open(g, argv[1], false, &c, err, sizeof(err)) < 0) {
		oci_error(g, "%s", err);
		return 1;
	}
	json_t *st = c.state;
	const char *bundle = json_string_value(json_object_get(st, "bundle"));
	const char *created = json_string_value(json_object_get(st, "created"));
	json_t *ann = json_object_get(st, "annotations");
	bool alive = c.status == OCI_CREATED || c.status == OCI_RUNNING;
	json_t *out = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:O}", "ociVersion", "1.1.0",
				"id", c.id, "status", oci_status_name(c.status), "pid",
				(json_int_t)(alive ? c.pid : 0), "bundle", bundle ? bundle : "",
				"created", created ? created : "", "owner", "", "annotations",
				ann ? ann : json_object());
	char *s = out ? json_dumps(out, JSON_INDENT(2)) : NULL;
	if (s)
		puts(s);
	free(s);
	json_decref(out);
	oci_container_close(&c);
	return s ? 0 : 1;
}

int oci_list(const struct oci_globals *g, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	const char *root = g->root ? g->root : OCI_ROOT_DEFAULT;
	DIR *d = opendir(root);
	printf("%-20s %-8s %-10s %s\n", "ID", "PID", "STATUS", "BUNDLE");
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct oci_container c;
		char err[320];
		if (e->d_name[0] == '.' ||
		    oci_container_open(g, e->d_name, false, &c, err, sizeof(err)) < 0)
			continue;
		const char *bundle = json_string_value(json_object_get(c.state, "bundle"));
		printf("%-20s %-8d %-10s %s\n", c.id, c.status == OCI_STOPPED ? 0 : (int)c.pid,
		       oci_status_name(c.status), bundle ? bundle : "");
		oci_container_close(&c);
	}
	closedir(d);
	return 0;
}

/* SIGNAL as runc takes it: a number, or a name with or without "SIG". 0 if unknown. */
/* KILL: the supervisor and everything of its session. */
static void kill_session(struct oci_container *c)
{
	kill(c->pid, SIGKILL);
	struct rundir rd;
	if (oci_container_rundir(c, &rd) == 0)
		session_reap_cgroups(&rd, false);
}

int oci_kill(const struct oci_globals *g, int argc, char **argv)
{
	int i = 1;
	while (i < argc && (strcmp(argv[i], "--all") == 0 || strcmp(argv[i], "-a") == 0))
		i++; /* the session is one process tree: --all is what every kill does */
	if (argc - i < 1 || argc - i > 2) {
		oci_error(g, "usage: kill [--all] ID [SIGNAL]");
		return 1;
	}
	int sig = argc - i == 2 ? signame_parse(argv[i + 1]) : SIGTERM;
	if (!sig) {
		oci_error(g, "kill: unknown signal '%s'", argv[i + 1]);
		return 1;
	}
	struct oci_container c;
	char err[320];
	if (oci_container_open(g, argv[i], false, &c, err, sizeof(err)) < 0) {
		oci_error(g, "%s", err);
		return 1;
	}
	int rc = 0;
	if (c.status != OCI_CREATED && c.status != OCI_RUNNING) {
		oci_error(g, "container not running");
		rc = 1;
	} else if (sig == SIGKILL) {
		kill_session(&c);
	} else if (kill(c.pid, sig) < 0) {
		oci_error(g, "kill %s: %s", c.id, strerror(errno));
		rc = 1;
	}
	oci_container_close(&c);
	return rc;
}

int oci_delete(const struct oci_globals *g, int argc, char **argv)
{
	bool force = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--force") == 0 || strcmp(argv[i], "-f") == 0) {
			force = true;
		} else {
			oci_error(g, "delete: bad option '%s'", argv[i]);
			return 1;
		}
	}
	if (argc - i != 1) {
		oci_error(g, "usage: delete [--force] ID");
		return 1;
	}
	struct oci_container c;
	char err[320];
	if (oci_container_open(g, argv[i], false, &c, err, sizeof(err)) < 0) {
		if (errno == ENOENT && force)
			return 0; /* as runc: nothing to delete is not an error with --force */
		oci_error(g, "%s", err);
		return 1;
	}
	if (c.status == OCI_RUNNING && !force) {
		oci_error(g, "cannot delete container %s that is not stopped: running", c.id);
		oci_container_close(&c);
		return 1;
	}
	if (c.status == OCI_CREATED || c.status == OCI_RUNNING) {
		kill_session(&c);
		for (int tries = 0; proc_start_time(c.pid) && tries < 500; tries++)
			usleep(20000);
	}
	struct rundir rd;
	if (oci_container_rundir(&c, &rd) == 0) {
		session_reap_cgroups(&rd, true);
		rundir_remove(&rd);
	}
	oci_container_remove(&c);
	oci_container_close(&c);
	return 0;
}
