/* SPDX-License-Identifier: Apache-2.0 */
/* session/template.h: templates — a guest booted once to the point where init waits for its
 * session (guest/init/template.c), saved by bulkhead-vmm, and restored for every session of
 * the same shape (--template).
 *
 * A template is keyed by what the saved guest depends on (session/template_key.h: the
 * kernel, the initramfs and bulkhead-vmm, the template's kernel command line, RAM, vCPUs,
 * the devices, the host's kernel and KVM's CPUID). It holds no
 * session data: the guest mounted nothing, ran nothing and drew no randomness in user
 * space, and what makes it a session (its bulkhead.* arguments, fresh entropy, the wall
 * clock) is sent after the restore (template_send_session). Templates live in
 * ${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-~/.cache}/bulkhead}/templates (0700), one file each
 * (0600, written whole under a temporary name, then renamed), with its shape beside it
 * (NAME.json, for `bulkhead template ls|rm`, cli/template_cmd.c). */
#ifndef BULKHEAD_SESSION_TEMPLATE_H
#define BULKHEAD_SESSION_TEMPLATE_H

#include <stddef.h>

struct session;
struct session_plan;

/* The template for plan p, open for reading: the cache's, or one made now (a session of its
 * own boots it, waits for init's AGENT_TEMPLATE_READY and has the VMM save it). Returns the
 * descriptor, or -1 with err set. */
int template_get(const struct session_plan *p, char *err, size_t errlen);

/* Its file name in the cache for plan p (the directory made when create). 0, or -1 with err. */
int template_path(const struct session_plan *p, char *path, size_t len, int create, char *err,
		  size_t errlen);

/* A restored template's session: connects to the guest's TEMPLATE_PORT through the session's
 * vsock socket (retrying until the boot deadline while the restored guest is not reachable
 * yet) and sends one SESSION frame: 64 bytes from getrandom, the wall clock, the plan's
 * bulkhead.* words. 0, or -1 with s->err set. */
int template_send_session(struct session *s);

#endif
