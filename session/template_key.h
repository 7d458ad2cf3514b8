/* SPDX-License-Identifier: Apache-2.0 */
/* session/template_key.h: what a template depends on, and the name that follows from it.
 *
 * A template's file is named by the SHA-256 of a text naming the kernel, the initramfs and
 * bulkhead-vmm (each file's device, inode, size and change time), the template's kernel
 * command line, RAM, vCPUs, the devices (which shares, in which order), and the host: its
 * kernel release and the CPUID its KVM offers (a guest saved on one CPU may use features
 * another lacks; another host kernel may not take every saved register). Change any of these
 * and the next session makes a new template; the old one is then stale.
 *
 * Beside each template, NAME.json records those inputs (not their identities), so that
 * `bulkhead template ls` can say whether the name still follows from them. */
#ifndef BULKHEAD_SESSION_TEMPLATE_KEY_H
#define BULKHEAD_SESSION_TEMPLATE_KEY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/boot_args.h"

#define TEMPLATE_NAME_LEN 32 /* hex digits: the first 16 bytes of the SHA-256 */

struct template_inputs {
	unsigned mem_mib, cpus;
	char cmdline[BOOT_ARGS_CMDLINE_MAX];
	const char *kernel, *initrd; /* bulkhead-vmm is the one beside bulkhead */
	bool fs[4];		     /* work share, image root, bind 0, bind 1 */
};

/* The template's name for in, into name (TEMPLATE_NAME_LEN + 1). 0; -1 with err when a file
 * it names cannot be read; -2 with err when KVM cannot be asked for this host's CPU. */
int template_name(const struct template_inputs *in, char *name, char *err, size_t errlen);

/* Writes TEMPLATE.json beside the template file at path (.snap replaced), 0600, whole or not
 * at all. Best effort: a template without one still serves. */
void template_shape_write(const char *snap_path, const struct template_inputs *in);

/* One template of the cache, as `bulkhead template ls` shows it. */
struct template_info {
	char name[TEMPLATE_NAME_LEN + 1];
	long long bytes; /* on disk */
	long long made;	 /* seconds since the epoch (the file's change time) */
	bool shape;	 /* NAME.json was read: the fields below are set */
	unsigned mem_mib, cpus;
	bool fs[4];
	enum template_state {
		TEMPLATE_CURRENT, /* its name still follows from its recorded inputs */
		TEMPLATE_STALE,	  /* no session will restore it again (why says why) */
		TEMPLATE_UNKNOWN, /* cannot be told here (why says why): never removed as stale */
	} state;
	char why[160];
};

/* Every template in the cache (sorted by name) into *out (malloc'd, *n entries). 0 (also for
 * no cache yet), or -1 with err, also when the cache's templates directory is not a directory
 * of ours, mode 0700 (a link to one included). */
int template_list(struct template_info **out, size_t *n, char *err, size_t errlen);

/* A template sessions will restore: a regular file of ours that no one else may read. */
struct stat;
bool template_file_ours(const struct stat *st);

/* Removes the template NAME (and its shape file). 0, or -1 with err. */
int template_remove(const char *name, char *err, size_t errlen);

#endif
