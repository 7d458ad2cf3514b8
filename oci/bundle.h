/* SPDX-License-Identifier: Apache-2.0 */
/* oci/bundle.h: an OCI bundle's config.json (and an exec's process.json) read into what a
 * bulkhead session needs, every field checked once, and each mount either placed (a directory bind
 * mount: a share of its own, up to OCI_BINDS_MAX), left to the guest (its own /proc, /sys, /dev,
 * /run), left out with a reason (the caller's network files: the guest has no network), or refused.
 *
 * What the config asks that a microVM cannot honour is said, never silently changed: the
 * namespaces, capabilities, seccomp profile and cgroup path describe a container on this
 * kernel, and the guest's own kernel replaces all of them (docs/OCI.md). */
#ifndef BULKHEAD_OCI_BUNDLE_H
#define BULKHEAD_OCI_BUNDLE_H

#include "image/image.h"
#include "session/request_limits.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define OCI_ID_MAX	 128
#define OCI_NOTES_MAX	 16 /* mounts left out, each said in the log */
#define OCI_MEM_MIN_MIB	 REQ_MEM_MIN_MIB
#define OCI_MEM_MAX_MIB	 REQ_MEM_MAX_MIB
#define OCI_MEM_DFLT_MIB 512 /* a container's default: more than a bare session's */
#define OCI_CPUS_MAX	 REQ_CPUS_MAX
#define OCI_BINDS_MAX	 2 /* SESSION_BINDS_MAX */
/* args, env and cwd together: what one exec request carries (AGENT_MAX_PAYLOAD), less room for
 * its fixed fields. */
#define OCI_PROCESS_BYTES 60000

/* A process: config.json's "process", or an exec's process.json. Its strings point into the
 * JSON document the bundle holds. */
struct oci_process {
	struct image_config cfg; /* args as cmd, env, cwd, user */
	bool terminal;
	unsigned rows, cols; /* consoleSize, 0 when not given */
};

struct oci_bundle {
	json_t *doc;
	char dir[PATH_MAX];  /* the bundle, absolute */
	char root[PATH_MAX]; /* root.path, absolute */
	bool root_ro;
	struct oci_process proc;
	const char *hostname;	/* NULL: none */
	unsigned mem_mib, cpus; /* guest RAM (linux.resources.memory.limit) and vCPUs (cpu) */
	/* Directory bind mounts, each served as a share of its own. */
	struct {
		const char *src, *dest;
		bool ro;
	} binds[OCI_BINDS_MAX];
	size_t nbinds;
	/* Annotations for what OCI cannot say. */
	const char *scope; /* io.bulkhead.scope: a file, or inline JSON (starts with '{') */
	const char *share_secrets; /* io.bulkhead.share-secrets: refuse or hide */
	const char *broker, *vault, *ca_file, *audit; /* io.bulkhead.broker, ... */
	const char *notes[OCI_NOTES_MAX];	      /* "DEST: why it was left out" */
	char note_buf[OCI_NOTES_MAX][PATH_MAX + 96];
	size_t nnotes;
};

/* Reads DIR/config.json. 0, or -1 with one line in err. */
int oci_bundle_load(struct oci_bundle *b, const char *dir, char *err, size_t errlen);
void oci_bundle_free(struct oci_bundle *b);

/* Reads one process object (an exec's --process file) into p; its strings live in *doc, which
 * the caller frees with json_decref. 0, or -1 with err. */
int oci_process_load(const char *path, json_t **doc, struct oci_process *p, char *err,
		     size_t errlen);
/* The same for an object already parsed (config.json's "process"). */
int oci_process_parse(json_t *o, struct oci_process *p, char *err, size_t errlen);

/* Whether ID is a container id we accept: [A-Za-z0-9_.+-], 1..OCI_ID_MAX, not starting with
 * '-' or '.'. */
bool oci_id_valid(const char *id);

#endif
