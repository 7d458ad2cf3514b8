/* SPDX-License-Identifier: Apache-2.0 */
/* session/plan.h: a session, decided before anything starts.
 *
 * What was asked (struct session_request: from `run`/`start` options, cli/session_opts.c;
 * an API or an OCI bundle may fill one the same way) is resolved once into a plan (struct
 * session_plan): every default filled in, the work share opened and judged once, the scope's
 * grants and the global policy applied, the engine chosen and the kernel command line
 * written. Everything that starts, watches and stops the session reads the plan; nothing
 * downstream parses an option again. */
#ifndef BULKHEAD_SESSION_PLAN_H
#define BULKHEAD_SESSION_PLAN_H

#include "session/broker_dev.h"
#include "session/engine.h"
#include "session/exit_codes.h"
#include "session/request_limits.h"
#include "session/share_fs.h"
#include "session/share_image.h"
#include "session/share_plan.h"
#include "image/image.h"
#include "lib/boot_args.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define RUN_MAX_ENV 64
/* Shares beside the work share and an image's root (an OCI bundle's bind mounts): the VMM
 * takes four virtio-fs devices (lib/boot_args.h's tags "bind0", "bind1"). */
#define SESSION_BINDS_MAX 2
/* Time from the engine's start to the guest's call home (--boot-timeout). Under TCG a
 * session is up in about a second; this is for loaded or slow hosts, and ends a guest that
 * never calls. */
#define BOOT_TIMEOUT_DEFAULT_S 60

/* What was asked. Strings are the caller's and must outlive the session. */
struct session_request {
	enum engine_kind engine;
	unsigned mem_mib, cpus;
	double timeout_s;	 /* 0: none */
	unsigned boot_timeout_s; /* 0: BOOT_TIMEOUT_DEFAULT_S */
	const char *kernel, *initrd;
	const char *console_path; /* --console FILE: the whole serial console */
	const char *ram_file;	  /* --ram-file FILE: guest RAM kept in FILE (qemu engine) */
	const char *policy;	  /* --policy FILE; NULL: the default when it exists */
	bool no_jail;		  /* --no-jail: back ends without the jail */
	bool template;		  /* --template: restore this session's template (session/template.c),
				   * made first if there is none */
	const char *jail_uid;	  /* --jail-uid UID[:GID]; NULL: a free one */
	unsigned mem_limit_mib;	  /* --mem-limit; 0: guest RAM + CGROUP_OVERHEAD_MIB */
	const char *work;	  /* --work DIR[:ro|:rw], NULL for none */
	/* Inside the work share (session/share_plan.h): --work-rule PATH:MODE, --share-secrets
	 * refuse|hide (NULL: not said), --share-allow PATH. */
	const char *work_rules[SHARE_RULES_MAX];
	size_t nwork_rules;
	const char *share_secrets;
	const char *share_allow[SHARE_RULES_MAX];
	size_t nshare_allow;
	const char *image;	    /* --image NAME, NULL: the initramfs alone */
	const char *keep_changes;   /* --keep-changes DIR */
	unsigned disk_mib;	    /* --disk; 0: SHARE_IMAGE_DISK_MIB */
	struct broker_opts broker;  /* --scope, --vault, --ca-file, --audit, --broker */
	bool verbose;		    /* -v: the serial console on stderr too */
	bool interactive;	    /* -i: forward our stdin */
	bool tty;		    /* -t: a pseudo-terminal in the guest */
	bool detached;		    /* `start`: no main command */
	bool json;		    /* `start --json`: the session as JSON once it is ready */
	const char *log_path;	    /* `start --log FILE`: its stderr once it is ready */
	char **argv;		    /* the main command, NULL-terminated; NULL: detached, or the
				     * image's own (plan.argv) */
	char *env[RUN_MAX_ENV + 1]; /* -e KEY=VALUE, NULL-terminated */
	size_t nenv;
	/* An OCI bundle (oci/): */
	const struct image *root; /* its root and process, served as they are (no write layer
				   * of ours: the caller's root is writable unless root_ro) */
	bool root_ro;
	struct session_bind { /* further shares: directories at a path of the guest's */
		const char *src, *dest;
		bool ro;
	} binds[SESSION_BINDS_MAX];
	size_t nbinds;
	const char *hostname; /* the guest's host name (NULL: bulkhead) */
	int start_fd;	      /* > 2: the main command waits until this is readable */
	int ready_stderr_fd;  /* > 2: our stderr once the guest is ready (until then, what
			       * fails is said on the caller's stderr, not a container's terminal) */
	bool forward_signals; /* a program is the caller: every signal goes to the main command
			       * (none ends the session once it runs), and -t has no "~." */
	int lifeline_fd;      /* > 2: the session ends when this becomes readable or hangs up
			       * (`bulkhead serve` holds the other end: the daemon's death ends it) */
	bool bind_later;      /* --bind-later: a pooled guest, bound to a scope once it is taken
			       * (session/session_bind.c) */
};
#define SESSION_REQUEST_INIT                                                                       \
	{                                                                                          \
		.engine = ENGINE_AUTO, .mem_mib = REQ_MEM_DEFAULT_MIB, .cpus = 1                   \
	}

/* Where the session's work share comes from. */
enum share_origin {
	SHARE_NONE,
	SHARE_ASKED,   /* --work */
	SHARE_GRANTED, /* the scope's "work" (which --work may repeat or narrow) */
};

/* Why the session may end by itself. */
enum plan_end {
	END_TIMEOUT, /* --timeout or the policy's session lifetime */
	END_EXPIRY,  /* the scope's expires_at */
};

struct session_plan {
	struct session_request req; /* as asked, with the policy's default path filled in */
	char kernel[PATH_MAX], initrd[PATH_MAX];
	enum share_origin share_origin;
	struct share_fs share;			  /* the work share (SHARE_NONE: unused) */
	struct share_fs binds[SESSION_BINDS_MAX]; /* req.binds, resolved */
	const char *guest_cwd;	/* where commands start: "/work" with a share, else "/" */
	double timeout_s;	/* the session's end at the latest, 0: none */
	enum plan_end end_kind; /* ... and what sets it */
	long long expires_at;	/* the scope's expiry, Unix seconds (0: none) */
	char expiry[32];	/* ... as UTC text */
	unsigned boot_timeout_s;
	unsigned long long mem_limit_bytes; /* the session's cgroup memory limit */
	struct engine_choice engine;
	char cmdline[BOOT_ARGS_CMDLINE_MAX];
	/* --template: the template's command line (cmdline without the session's bulkhead.*
	 * words, with bulkhead.template=1) and those words, which the restored guest is sent. */
	char template_cmdline[BOOT_ARGS_CMDLINE_MAX];
	char template_args[BOOT_ARGS_CMDLINE_MAX];
	/* --image: the image (its config read once), the command (CMD or the image's) and the
	 * environment every command starts with (the image's, then -e). */
	bool has_image;
	bool image_borrowed; /* req.root's: not ours to close */
	struct image image;
	char **argv;
	char *env[IMAGE_ENV_MAX + RUN_MAX_ENV + 1];
	/* --scope, read once: what the policy judges is what the broker gets (req.broker's
	 * scope_text points here), and where the file really was when it was read. */
	char *scope_text;
	char scope_real[PATH_MAX];
	/* What the guest may do where in its shares, and the credential files found in them
	 * (plan_share.c): the layers' asks (plan_scope.c, plan_policy.c), then each share's rules
	 * and scan. share.rules and binds[i].rules point here. */
	struct share_layers share_layers;
	struct share_rules share_rules, bind_rules[SESSION_BINDS_MAX];
	struct share_scan share_scan, bind_scan[SESSION_BINDS_MAX];
};

/* --template: splits a session's kernel command line into the template's (every word but
 * the bulkhead.* ones and "quiet", then "quiet bulkhead.template=1") and the session's own
 * bulkhead.* words, which its restored guest is sent. 0, or -1 when one does not fit. */
int plan_template_split(const char *cmdline, char *tmpl, size_t tlen, char *args, size_t alen);

/* Resolves req into p. Returns 0, or -1 with one line in err (nothing was started). */
int plan_resolve(const struct session_request *req, struct session_plan *p, char *err,
		 size_t errlen);

/* plan_scope.c: the scope's work share and expiry (before the policy; p->req.work and the
 * scope file as asked). 0 or -1 with err. */
struct rules;
int plan_scope(struct session_plan *p, const struct rules *scope, char *err, size_t errlen);
/* plan_policy.c: the global policy over the plan: its share, limits, scope and lifetime.
 * 0 or -1 with err. */
int plan_policy(struct session_plan *p, const struct rules *scope, char *err, size_t errlen);
/* The policy's deny_share_paths entry that refuses the share FS ("~/" read as the caller's
 * home and as the share owner's), or NULL. */
struct policy;
const char *plan_share_denied(const struct policy *pol, const struct share_fs *fs);
/* plan_share.c: the shares' rules and credential scans, last (the scan reads the share).
 * 0 or -1 with err. */
int plan_share(struct session_plan *p, char *err, size_t errlen);
/* plan_image.c: --image: the image, its command, environment and user, and the kernel
 * parameter that tells init. 0 or -1 with err. */
int plan_image(struct session_plan *p, char *err, size_t errlen);
/* A pooled guest's binding (session/session_bind.c): o's scope read once and judged as
 * plan_resolve judges a cold session's (its grants, the global policy, its expiry, the host
 * files out of the shares' reach), against p, the plan the guest was booted with, into bp
 * (plan_release it; bp->req.broker is what the broker gets). 0, or -1 with err. */
int plan_bind(const struct session_plan *p, const struct broker_opts *o, struct session_plan *bp,
	      char *err, size_t errlen);
/* Releases what plan_resolve acquired (the image's config, the scope's text); plan_resolve
 * releases it itself when it fails. */
void plan_release(struct session_plan *p);

#endif
