/* SPDX-License-Identifier: Apache-2.0 */
/* oci/oci.h: bulkhead-oci, an OCI runtime whose containers are bulkhead microVMs. Podman
 * (--runtime), containerd's runc shim (BinaryName) and dockerd ("runtimes") call it as they
 * call runc; see docs/OCI.md.
 *
 *   create   the session boots (its plan from the bundle: oci/bundle.c, oci/create.c) and waits
 *            at a start gate; the process in --pid-file is the session's supervisor, which
 *            lives as long as the container's command and exits with its status
 *   start    opens the gate: the command starts in the guest
 *   state    the OCI state JSON (oci/state.c)
 *   kill     a signal for the command (the supervisor passes it on); KILL ends the session
 *   delete   removes what is left: run directory, cgroups, the state directory (oci/control.c)
 *   exec     one more command in the same guest (oci/exec.c)
 *   features what this runtime supports, as JSON */
#ifndef BULKHEAD_OCI_OCI_H
#define BULKHEAD_OCI_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define OCI_ROOT_DEFAULT "/run/bulkhead-oci"

/* The global options every caller may pass. */
struct oci_globals {
	const char *root; /* --root: where containers' state directories live */
	const char *log;  /* --log FILE: errors (and notes) also go there */
	bool log_json;	  /* --log-format json */
	/* The broker for containers whose bundle says nothing (io.bulkhead.* annotations win):
	 * an operator's defaults, e.g. dockerd's "runtimeArgs", since Docker sets no annotation. */
	const char *scope, *vault, *ca_file, *broker;
	const char *share_secrets; /* --share-secrets: for bind mounts' credential files */
};

/* An error for the caller: one line on stderr, and in --log (JSON lines when asked, as runc
 * writes them: containerd's shim reads the last one). */
void oci_error(const struct oci_globals *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A note in --log only (what a bundle asked that a microVM leaves out). */
void oci_note(const struct oci_globals *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Subcommands: argc/argv start at the subcommand's name; the exit code is returned. */
int oci_create(const struct oci_globals *g, int argc, char **argv);
int oci_start(const struct oci_globals *g, int argc, char **argv);
int oci_state(const struct oci_globals *g, int argc, char **argv);
int oci_kill(const struct oci_globals *g, int argc, char **argv);
int oci_delete(const struct oci_globals *g, int argc, char **argv);
int oci_exec(const struct oci_globals *g, int argc, char **argv);
int oci_features(const struct oci_globals *g, int argc, char **argv);
int oci_list(const struct oci_globals *g, int argc, char **argv);

/* oci/console.c: --console-socket: a new pseudo-terminal whose other end goes to the socket
 * (as runc sends it); returns the terminal's fd for the container's stdio, or -1 with err. */
int oci_console_open(const char *socket_path, unsigned rows, unsigned cols, char *err,
		     size_t errlen);
/* In the new process: the terminal becomes its controlling terminal and stdin/out/err. */
int oci_console_attach(int tty);

/* Writes PID into FILE atomically (a caller may read it at any moment). 0 or -1 (errno). */
int oci_pid_file(const char *file, pid_t pid);

#endif
