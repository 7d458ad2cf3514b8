/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_rules.h: what the guest may do where in a share — each path under it read-write,
 * read-only or hidden, the most specific rule winning and the share's own mode the default.
 *
 * Enforced on the host, in virtiofsd's own mount namespace (session/share_fs.c starts it through
 * the jail): after the share is bound over itself, share_rules_apply() binds each ro or rw
 * path over itself with that mode, and covers each hidden one with an empty read-only
 * directory or file of a private tmpfs (a git config found with a credential gets a clean
 * copy instead of an empty file: share_scan.h). virtiofsd serves what it sees there, so no
 * request of the guest's reaches what a rule withholds: a write under a read-only path is
 * EROFS; a rename or link across a rule's border EXDEV; a mount point cannot be removed or
 * renamed over (EBUSY); a hidden path is an empty directory or file to every lookup.
 *
 * A rule may name a path that does not exist yet: an empty directory is made there (as the
 * share's owner) before the session, so that the rule holds what the guest might create
 * (under ro or hidden it cannot create anything there), and removed afterwards if it is still
 * an empty directory. */
#ifndef BULKHEAD_SESSION_SHARE_RULES_H
#define BULKHEAD_SESSION_SHARE_RULES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SHARE_RULES_MAX 64 /* rules a session may ask for (found credential files come on top) */

enum share_mode { SHARE_MODE_RW, SHARE_MODE_RO, SHARE_MODE_HIDDEN }; /* narrower as it grows */

struct share_rule {
	char *path; /* relative to the share, canonical (lib/relpath.h) */
	enum share_mode mode;
	const char *origin; /* who asked: "--work-rule", "the scope", "found: a .env with values" */
	char *clean;	    /* a hidden file's cover holds this (a cleaned git config), else empty */
	size_t clean_n;
	/* Filled by share_rules_resolve(): */
	bool dir;     /* a directory (else a regular file) */
	bool missing; /* not there yet: made as an empty directory */
};

struct share_rules {
	struct share_rule *r;
	size_t n, cap;
	/* Directories made for missing rules, relative, deepest last (removed in reverse). */
	char **made;
	size_t nmade;
	bool made_them; /* share_rules_make ran: share_rules_cleanup removes them */
	char share[PATH_MAX]; /* the share's directory (share_rules_resolve) */
};

const char *share_mode_name(enum share_mode m);
/* "rw", "ro", "hidden" into *M: 0, or -1. */
int share_mode_parse(const char *s, enum share_mode *m);

/* Adds the rule PATH (N bytes) MODE, asked by ORIGIN (a static text). The same path twice
 * keeps the narrower mode. 0, or -1 with why in err (a path that is not canonical: its
 * reason, quoted). */
int share_rules_add(struct share_rules *rs, const char *path, size_t n, enum share_mode mode,
		    const char *origin, char *err, size_t errlen);
/* "PATH:MODE" (--work-rule; the last ':' splits): as share_rules_add. */
int share_rules_add_spec(struct share_rules *rs, const char *spec, const char *origin, char *err,
			 size_t errlen);
/* The mode the rules give PATH (relative): the most specific rule at or above it, else DEF. */
enum share_mode share_rules_mode(const struct share_rules *rs, const char *path,
				 enum share_mode def);

/* Checks each rule against the share DIR (opened, absolute) as it is now: no symbolic link and
 * no mount on a rule's way, a directory or a regular file at its end (else missing: said so),
 * nothing hidden reachable under another name (a regular file with more than one link), and
 * orders the rules from the shallowest. 0, or -1 with why in err. */
int share_rules_resolve(struct share_rules *rs, const char *dir, char *err, size_t errlen);

/* Before virtiofsd starts: the missing paths made, as empty directories owned by OWNER and
 * GROUP (the share's). 0, or -1 with why in err. */
int share_rules_make(struct share_rules *rs, uid_t owner, gid_t group, char *err, size_t errlen);
/* In virtiofsd's mount namespace, after the share is bound there (jail_spec.prepare): binds
 * and covers, shallowest first. Allocates nothing (it runs in a child of the launcher). 0, or
 * -errno with the failing step in STEP. */
int share_rules_apply(const void *rules, char *step, size_t steplen);

/* After the session: what was made for missing rules and is still an empty directory is
 * removed. */
void share_rules_cleanup(struct share_rules *rs);
void share_rules_free(struct share_rules *rs);

#endif
