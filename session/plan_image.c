/* SPDX-License-Identifier: Apache-2.0 */
/* session/plan_image.c: a session on an image (--image NAME): the image found and its config read
 * once, then what it decides — the command when none is given, the environment (the image's,
 * then -e over it), where commands start without a work share, and the user init runs them
 * as (bulkhead.image= on the kernel command line, lib/boot_args.h). */
#include "session/plan.h"
#include "lib/env_merge.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The image's environment, then -e over it. image_open refused entries with a newline:
 * `bulkhead exec` reads them back one per line (the run directory's "env"). */
static void image_env(struct session_plan *p)
{
	char *const *const layers[] = { p->image.cfg.env, p->req.env, NULL };
	env_merge(layers, p->env, sizeof(p->env) / sizeof(p->env[0]) - 1);
}

/* " bulkhead.image=UID:GID[:G1,G2,...]" after what is there. */
static int image_param(struct session_plan *p, char *err, size_t errlen)
{
	const struct image_config *c = &p->image.cfg;
	size_t len = strlen(p->cmdline), cap = sizeof(p->cmdline);
	int n = snprintf(p->cmdline + len, cap - len, " %s%u:%u", BOOT_ARGS_IMAGE, (unsigned)c->uid,
			 (unsigned)c->gid);
	for (size_t i = 0; n > 0 && (size_t)n < cap - len && i < c->ngids; i++) {
		len += (size_t)n;
		n = snprintf(p->cmdline + len, cap - len, "%c%u", i ? ',' : ':',
			     (unsigned)c->gids[i]);
	}
	if (n < 0 || (size_t)n >= cap - len) {
		snprintf(err, errlen, "image '%s': too many groups for the kernel command line",
			 p->image.name);
		return -1;
	}
	return 0;
}

int plan_image(struct session_plan *p, char *err, size_t errlen)
{
	const struct session_request *r = &p->req;
	p->argv = r->argv;
	if (!r->image && !r->root) {
		memcpy(p->env, r->env, sizeof(r->env));
		return 0;
	}
	if (r->root) {
		p->image = *r->root;
		p->image_borrowed = true;
	} else if (image_open(r->image, &p->image, err, errlen) < 0) {
		return -1;
	}
	p->has_image = true;
	/* `run --image NAME` alone runs the image's command, as a container would. */
	if (!p->argv && !r->detached) {
		if (!p->image.cfg.ncmd) {
			snprintf(err, errlen, "image '%s' has no command of its own: give CMD",
				 r->image);
			return -1;
		}
		p->argv = p->image.cfg.cmd;
	}
	image_env(p);
	if (image_param(p, err, errlen) < 0)
		return -1;
	if (p->share_origin == SHARE_NONE)
		p->guest_cwd = p->image.cfg.cwd;
	/* The write layer is a tmpfs whose pages the session's cgroup pays for. */
	if (!r->keep_changes && !r->root && !r->mem_limit_mib)
		p->mem_limit_bytes +=
			(unsigned long long)(r->disk_mib ? r->disk_mib : SHARE_IMAGE_DISK_MIB)
			<< 20;
	return 0;
}

void plan_release(struct session_plan *p)
{
	if (p->has_image && !p->image_borrowed)
		image_close(&p->image);
	p->has_image = false;
	free(p->scope_text);
	p->scope_text = NULL;
	p->req.broker.scope_text = NULL;
	share_layers_free(&p->share_layers);
	share_rules_free(&p->share_rules);
	share_scan_free(&p->share_scan);
	for (size_t i = 0; i < SESSION_BINDS_MAX; i++) {
		share_rules_free(&p->bind_rules[i]);
		share_scan_free(&p->bind_scan[i]);
	}
	p->share.rules = NULL;
}
