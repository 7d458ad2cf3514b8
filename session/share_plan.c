/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_plan.c: a share's rules and credential files decided (share_plan.h). */
#include "session/share_plan.h"

#include "broker/policy.h"
#include "broker/rules.h"
#include "lib/io.h"
#include "lib/relpath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LISTED_MAX 16 /* findings named in a refusal; the rest counted */

static const enum share_mode scope_modes[] = { SHARE_MODE_RW, SHARE_MODE_RO, SHARE_MODE_HIDDEN };

int share_layers_scope(struct share_layers *L, const struct rules *scope, char *err,
		       size_t errlen)
{
	L->scope_ro = scope->work && scope->work_read_only;
	L->scope_secrets = scope->work_secrets;
	for (size_t i = 0; i < scope->n_work_paths; i++)
		if (share_rules_add(&L->scope_rules, scope->work_paths[i].path,
				    strlen(scope->work_paths[i].path),
				    scope_modes[scope->work_paths[i].mode], "the scope's work.paths",
				    err, errlen) < 0)
			return -1;
	if (scope->n_work_allow &&
	    !(L->scope_allow = calloc(scope->n_work_allow, sizeof(*L->scope_allow))))
		goto oom;
	for (size_t i = 0; i < scope->n_work_allow; i++, L->nscope_allow++)
		if (!(L->scope_allow[i] = strdup(scope->work_allow[i])))
			goto oom;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

int share_layers_policy(struct share_layers *L, const struct policy *pol, char *err,
			size_t errlen)
{
	L->policy_secrets = pol->share_secrets;
	L->policy_no_allow = pol->share_secrets_no_allow;
	if (pol->n_share_secret_patterns &&
	    !(L->patterns = calloc(pol->n_share_secret_patterns, sizeof(*L->patterns))))
		goto oom;
	for (size_t i = 0; i < pol->n_share_secret_patterns; i++, L->npatterns++)
		if (!(L->patterns[i] = strdup(pol->share_secret_patterns[i])))
			goto oom;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

void share_layers_free(struct share_layers *L)
{
	share_rules_free(&L->scope_rules);
	for (size_t i = 0; i < L->nscope_allow; i++)
		free(L->scope_allow[i]);
	for (size_t i = 0; i < L->npatterns; i++)
		free(L->patterns[i]);
	free(L->scope_allow);
	free(L->patterns);
	memset(L, 0, sizeof(*L));
}

/* The scope's rules, then the session's, each of which may narrow (never widen) what the scope
 * gives its path. */
static int gather_rules(const char *label, const struct share_layers *L,
			const struct share_asks *a, struct share_rules *rules, char *err,
			size_t errlen)
{
	const struct share_rules *sr = &L->scope_rules;
	enum share_mode base = L->scope_ro ? SHARE_MODE_RO : SHARE_MODE_RW;

	for (size_t i = 0; i < sr->n; i++)
		if (share_rules_add(rules, sr->r[i].path, strlen(sr->r[i].path), sr->r[i].mode,
				    sr->r[i].origin, err, errlen) < 0)
			return -1;
	for (size_t i = 0; i < a->nrules; i++) {
		struct share_rules one = { 0 };
		enum share_mode given;

		if (share_rules_add_spec(&one, a->rules[i], "--work-rule", err, errlen) < 0) {
			share_rules_free(&one);
			return -1;
		}
		given = share_rules_mode(sr, one.r[0].path, base);
		if (one.r[0].mode < given) {
			snprintf(err, errlen,
				 "--work-rule %.200s: the scope makes %.200s %s; a session may narrow "
				 "its scope, never widen it",
				 a->rules[i], one.r[0].path, share_mode_name(given));
			share_rules_free(&one);
			return -1;
		}
		if (share_rules_add(rules, one.r[0].path, strlen(one.r[0].path), one.r[0].mode,
				    "--work-rule", err, errlen) < 0) {
			share_rules_free(&one);
			return -1;
		}
		share_rules_free(&one);
	}
	if (rules->n > SHARE_RULES_MAX) {
		snprintf(err, errlen, "%s: at most %d rules", label, SHARE_RULES_MAX);
		return -1;
	}
	return 0;
}

/* Whose word decides what is done with credential files. */
static void decide(const struct share_layers *L, const struct share_asks *a,
		   struct share_outcome *out)
{
	if (L->policy_secrets) {
		out->secrets = L->policy_secrets;
		out->secrets_by = "the global policy";
	} else if (a->secrets) {
		out->secrets = strcmp(a->secrets, "hide") ? SHARE_SECRETS_REFUSE : SHARE_SECRETS_HIDE;
		out->secrets_by = "--share-secrets";
	} else if (L->scope_secrets) {
		out->secrets = L->scope_secrets;
		out->secrets_by = "the scope";
	} else {
		out->secrets = SHARE_SECRETS_REFUSE;
		out->secrets_by = "the default";
	}
}

static bool allowed(const char *path, const struct share_layers *L, const struct share_asks *a)
{
	for (size_t i = 0; i < a->nallow; i++)
		if (relpath_under(path, a->allow[i]))
			return true;
	for (size_t i = 0; i < L->nscope_allow; i++)
		if (relpath_under(path, L->scope_allow[i]))
			return true;
	return false;
}

/* The git config found at F, cleaned, as the rule's cover (the file read again whole: the scan
 * read at most its first bytes). */
static int clean_config(int dirfd, const struct share_found *f, struct share_rule *r, char *err,
			size_t errlen)
{
	char *buf = malloc(SHARE_SCAN_FILE_MAX + 1);
	int fd = openat(dirfd, f->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = buf && fd >= 0 ? io_read_full(fd, buf, SHARE_SCAN_FILE_MAX + 1) : -1;
	char q[200];

	if (fd >= 0)
		close(fd);
	share_scan_quote(f->path, q, sizeof(q));
	if (n < 0 || n > SHARE_SCAN_FILE_MAX ||
	    share_git_clean(buf, (size_t)n, &r->clean, &r->clean_n, NULL, 0) < 0) {
		snprintf(err, errlen, "%s: cannot make a clean copy (%s)", q,
			 n > SHARE_SCAN_FILE_MAX ? "larger than 64 KiB" : "unreadable");
		free(buf);
		return -1;
	}
	memset(buf, 0, (size_t)n);
	free(buf);
	return 0;
}

/* The refusal: each finding (up to LISTED_MAX), why, and what to do. */
static void refusal(const char *label, const struct share_scan *s, char *err, size_t errlen,
		    int dirfd)
{
	size_t len = 0, shown = 0, n = s->n + s->n_more;

	len += (size_t)snprintf(err, errlen, "%s holds credential files the guest must not see:",
				label);
	for (size_t i = 0; i < s->n && len < errlen; i++) {
		char q[160], fix[400] = "";

		if (strcmp(s->found[i].fate, "refused"))
			continue;
		if (shown++ == LISTED_MAX)
			break;
		share_scan_quote(s->found[i].path, q, sizeof(q));
		if (s->found[i].kind == SHARE_FOUND_GIT_CONFIG) {
			char *buf = malloc(SHARE_SCAN_FILE_MAX), *clean = NULL;
			int fd = openat(dirfd, s->found[i].path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			ssize_t r = buf && fd >= 0 ? io_read_full(fd, buf, SHARE_SCAN_FILE_MAX) : -1;
			size_t cn;

			if (r > 0 && share_git_clean(buf, (size_t)r, &clean, &cn, fix, sizeof(fix)) > 0) {
				for (char *nl; (nl = strchr(fix, '\n'));)
					*nl = nl[1] ? ';' : '\0';
			}
			if (clean)
				memset(clean, 0, cn);
			free(clean);
			if (buf)
				memset(buf, 0, SHARE_SCAN_FILE_MAX);
			free(buf);
			if (fd >= 0)
				close(fd);
		}
		len += (size_t)snprintf(err + len, errlen - len, " %s (%s%s%s);", q, s->found[i].why,
					fix[0] ? "; run: " : "", fix);
	}
	(void)n;
	if (len < errlen && shown > LISTED_MAX)
		len += (size_t)snprintf(err + len, errlen - len,
					" and more ('bulkhead policy share' lists them all);");
	if (len < errlen)
		snprintf(err + len, errlen - len,
			 " remove them, hide them from the guest (--share-secrets hide), or share "
			 "one as it is (--share-allow PATH)");
}

/* The mode the most specific of RULES gives PATH (a rule on it or on a directory above it),
 * or -1 when none does. */
static int rule_mode(const struct share_rules *rules, const char *path)
{
	size_t best = 0;
	int mode = -1;

	for (size_t i = 0; i < rules->n; i++) {
		const char *r = rules->r[i].path;
		size_t n = strlen(r);

		if (n >= best && !strncmp(path, r, n) && (path[n] == '\0' || path[n] == '/')) {
			best = n;
			mode = (int)rules->r[i].mode;
		}
	}
	return mode;
}

/* Whether a rule deeper than hidden rule I makes part of it visible again. */
static bool shown_within(const struct share_rules *rules, size_t i)
{
	const char *h = rules->r[i].path;
	size_t n = strlen(h);

	for (size_t j = 0; j < rules->n; j++)
		if (rules->r[j].mode != SHARE_MODE_HIDDEN && !strncmp(rules->r[j].path, h, n) &&
		    rules->r[j].path[n] == '/')
			return true;
	return false;
}

int share_plan(const char *dir, const char *label, bool work,
	       const struct share_layers *L, const struct share_asks *a, struct share_rules *rules,
	       struct share_scan *scan, struct share_outcome *out, char *err, size_t errlen)
{
	const char *skip[SHARE_RULES_MAX];
	struct share_scan_opts o = { .patterns = (const char *const *)L->patterns,
				     .npatterns = L->npatterns,
				     .skip = skip };
	int dirfd, rc = 0;
	bool refused = false;

	memset(out, 0, sizeof(*out));
	decide(L, a, out);
	if ((a->nallow || L->nscope_allow) && L->policy_no_allow) {
		snprintf(err, errlen,
			 "share_secrets_allow: refused by the global policy (share_secrets_allow: "
			 "false)");
		return -2;
	}
	if (work && gather_rules(label, L, a, rules, err, errlen) < 0)
		return -2;
	/* A hidden path is not scanned, unless a deeper rule shows part of it again: then what
	 * that part holds is found like anything else (a file the hidden part still hides is
	 * passed over below). */
	for (size_t i = 0; i < rules->n; i++)
		if (rules->r[i].mode == SHARE_MODE_HIDDEN && !shown_within(rules, i))
			skip[o.nskip++] = rules->r[i].path;
	if ((dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", label, strerror(errno));
		return -1;
	}
	if (share_scan(dirfd, &o, scan, err, errlen) < 0) {
		close(dirfd);
		return -1;
	}
	for (size_t i = 0; !rc && i < scan->n; i++) {
		struct share_found *f = &scan->found[i];

		if (rule_mode(rules, f->path) == SHARE_MODE_HIDDEN) {
			f->fate = "hidden";
			continue; /* a rule hides it already */
		}
		if (allowed(f->path, L, a)) {
			f->fate = "allowed";
			out->allowed++;
		} else if (out->secrets != SHARE_SECRETS_HIDE) {
			f->fate = "refused";
			refused = true;
		} else {
			f->fate = f->kind == SHARE_FOUND_GIT_CONFIG ? "cleaned" : "hidden";
			rc = share_rules_add(rules, f->path, strlen(f->path), SHARE_MODE_HIDDEN,
					     f->why, err, errlen);
			if (!rc && f->kind == SHARE_FOUND_GIT_CONFIG)
				rc = clean_config(dirfd, f, &rules->r[rules->n - 1], err, errlen);
			out->cleaned += f->kind == SHARE_FOUND_GIT_CONFIG;
			out->hidden += f->kind != SHARE_FOUND_GIT_CONFIG;
		}
	}
	if (!rc && scan->n_more && out->secrets == SHARE_SECRETS_HIDE) {
		snprintf(err, errlen, "%s: more than %d credential files; hide or remove some first",
			 label, SHARE_SCAN_FOUND);
		rc = -1;
	}
	if (!rc && (refused || (scan->n_more && out->secrets != SHARE_SECRETS_HIDE))) {
		refusal(label, scan, err, errlen, dirfd);
		rc = -1;
	}
	/* A scan that stopped early has not seen what lies beyond, and a guest can make one stop
	 * (files enough to reach a bound, in the share it writes): the work share is not shared
	 * on it. The way out is the host's: hide the part that made it stop, or remove it. */
	if (!rc && work && !scan->complete) {
		snprintf(err, errlen,
			 "%s: the scan for credential files stopped early (%s), so what lies beyond "
			 "was not checked and the share is not given to the guest; hide that part "
			 "(--work-rule PATH:hidden, or the scope's work.paths) or remove what made it "
			 "stop",
			 label, scan->stopped);
		rc = -1;
	}
	close(dirfd);
	if (!rc && rules->n && share_rules_resolve(rules, dir, err, errlen) < 0)
		rc = -1;
	return rc;
}
