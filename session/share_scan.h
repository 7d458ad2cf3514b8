/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_scan.h: credential files in a share, found before a session starts.
 *
 * A work directory is usually a real checkout, and a checkout often holds the very secrets the
 * broker exists to keep out of the guest: a .env, a token in .git/config's remote, an .npmrc
 * with an _authToken, a private key. share_scan() walks the share (bounded: depth, entries,
 * bytes read per file and in all, time), names each such file and why, and says whether it
 * looked at everything. The launcher then refuses the session, or hides what was found
 * (session/share_rules.h), as the session and the global policy say (docs/THREAT-MODEL.md "The
 * work share").
 *
 * What counts (by name, then by content where a name alone would be noisy):
 *   .env, .env.* (not .example/.sample/.template/.dist)  an assignment with a value
 *   .git-credentials, .netrc, _netrc                     any credential line
 *   .npmrc                                               _authToken/_auth/_password with a
 *                                                        value that is not a ${VARIABLE}
 *   .pypirc                                              a password
 *   .docker/config.json                                  an "auth" or "identitytoken"
 *   .aws/credentials                                     a secret key or session token
 *   *.pem, *.key, id_* (not *.pub)                       a PRIVATE KEY block
 *   *.p12, *.pfx, *.ppk, *.jks, *.keystore               the name alone (key stores)
 *   *.json up to the per-file bound                      a service account's private key
 *   .git/config (and .git/modules/NAME/config)           a remote URL carrying a token, or
 *                                                        an http.extraheader
 *   the global policy's extra patterns                   the name alone
 * Not looked into: symbolic links (what they point at inside the share is scanned where it
 * is), dependency and cache trees (node_modules, .venv, venv, __pycache__, .tox, .mypy_cache,
 * .pytest_cache), .git's objects and refs, and paths the caller skips (hidden by a rule). */
#ifndef BULKHEAD_SESSION_SHARE_SCAN_H
#define BULKHEAD_SESSION_SHARE_SCAN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* The bounds, unless the caller gives others. */
#define SHARE_SCAN_DEPTH    32
#define SHARE_SCAN_ENTRIES  100000
#define SHARE_SCAN_FILE_MAX (64 << 10) /* bytes read of one file */
#define SHARE_SCAN_READ_MAX (32 << 20) /* bytes read in all */
#define SHARE_SCAN_MS	    3000
#define SHARE_SCAN_FOUND    256 /* findings kept; more only counted */

enum share_found_kind {
	SHARE_FOUND_FILE,	/* the file holds a credential: hidden whole, or refused */
	SHARE_FOUND_GIT_CONFIG, /* a git config with a credential: replaced by a clean copy */
};

struct share_found {
	char path[PATH_MAX]; /* relative to the share, as on disk (may hold any byte) */
	enum share_found_kind kind;
	const char *why; /* fixed text: "a .env with values", "a private key", ... */
	const char *fate; /* what share_plan made of it: "refused", "hidden", "cleaned" (a git
			   * config's clean copy shown), "allowed" (shared as it is); NULL: not yet */
};

struct share_scan_opts {
	/* Globs (fnmatch) of the global policy: a name alone, or a relative path when it holds
	 * a '/'. */
	const char *const *patterns;
	size_t npatterns;
	/* Relative paths not looked into (hidden by a rule: nothing of them reaches the guest). */
	const char *const *skip;
	size_t nskip;
	/* 0: the defaults above. */
	unsigned depth;
	unsigned long entries;
	unsigned ms;
};

struct share_scan {
	struct share_found *found;
	size_t n;	  /* kept in found */
	size_t n_more;	  /* found past SHARE_SCAN_FOUND, only counted */
	bool complete;	  /* every entry looked at */
	char stopped[200]; /* else which bound stopped it, and where */
	unsigned long entries;
	unsigned long long bytes_read;
	unsigned ms;
};

/* Scans the directory DIRFD. 0 with *out filled (free it with share_scan_free), or -1 with
 * why in err (out of memory, the share unreadable at its top). A subdirectory that cannot be
 * read is no error: it is said in out->stopped and out->complete is false. */
int share_scan(int dirfd, const struct share_scan_opts *o, struct share_scan *out, char *err,
	       size_t errlen);
void share_scan_free(struct share_scan *s);
/* PATH (any bytes) for a message: printable ASCII as it is, every other byte and '\\' as
 * \xNN, "..." when cut to OUTLEN. */
void share_scan_quote(const char *path, char *out, size_t outlen);

/* share_scan_match.c: what a file is, from its relative PATH (its last component is the
 * name), whether its directory is a git directory (GIT_DIR: a HEAD beside it) and the first N
 * bytes of it (BUF; NULL when not read). Returns the reason it holds a credential and its
 * kind in *kind, or NULL. *read_it: 1 when the name asks for the content (call again with
 * it), 0 when the answer stands. Patterns as in the options (matched without regard to
 * case). */
const char *share_scan_match(const char *path, bool git_dir, const char *buf, size_t n,
			     bool *read_it, enum share_found_kind *kind,
			     const struct share_scan_opts *o);
/* Whether name S ends with TAIL, without regard to case (".JSON" is ".json"). */
bool share_scan_ends(const char *s, const char *tail);
/* Whether PATH is a git config git reads (GIT_DIR as above). */
bool share_scan_git_config(const char *path, bool git_dir);
/* Whether a directory named NAME at relative PATH is left unvisited (dependencies, .git's
 * object store, a skipped path). */
bool share_scan_skip_dir(const char *path, const char *name, const struct share_scan_opts *o);

/* share_git.c: a git config's credentials. share_git_clean() writes CONFIG (N bytes) to *OUT
 * (malloc'd, *OUTN bytes) without them: the userinfo of every URL that carries one, and every
 * http.extraheader line. Returns how many it took out (0: nothing to clean, *OUT NULL), -1
 * out of memory, or -2 when a line is beyond a line-by-line cleaning (a continued value, an
 * escape or a partial quote near a URL or a header, a URL with a query, an include): such a
 * config is a credential file as a whole. FIX (may be NULL) gets the commands that clean the
 * repository for good, one per line ("git remote set-url origin https://host/path", never a
 * query or a fragment), as far as it fits. */
int share_git_clean(const char *config, size_t n, char **out, size_t *outn, char *fix,
		    size_t fixlen);
/* The files CONFIG (N bytes) includes ([include] and [includeIf] "path"), as written: up to
 * MAX of them into PATHS (pointers into CONFIG) and LENS. How many. */
int share_git_includes(const char *config, size_t n, const char *paths[], size_t *lens,
		       size_t max);

#endif
