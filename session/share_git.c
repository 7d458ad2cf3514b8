/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_git.c: a git config without its credentials (share_scan.h). A checkout's remote is
 * often "https://x-access-token:ghp_...@github.com/o/r.git", and CI leaves an
 * "http.https://github.com/.extraheader = AUTHORIZATION: basic ..." behind. The guest gets the
 * config with those taken out: its git still knows every remote, and a push goes through the
 * broker, which adds the scope's credential for that host. Line by line: git's config syntax
 * puts a URL in a value or in a section's quoted name ([url "..."], [http "..."]), and either
 * way its userinfo sits between "://" and the authority's '@'. */
#include "session/share_scan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Token shapes that are credentials even without a password part. */
static const char *const token_prefixes[] = {
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "x-access-token",
	"x-token-auth", "oauth2", NULL,
};

/* Whether USERINFO (N bytes, before an '@') is a credential, not a bare user name such as
 * "git" or "alice". */
static bool userinfo_secret(const char *u, size_t n)
{
	if (memchr(u, ':', n) || n >= 16)
		return true;
	for (size_t i = 0; token_prefixes[i]; i++) {
		size_t k = strlen(token_prefixes[i]);

		if (n >= k && !strncasecmp(u, token_prefixes[i], k))
			return true;
	}
	return false;
}

/* The key of a "key = value" line (LINE, N bytes) in *K, *KN; 0 when the line is none. */
static int line_key(const char *line, size_t n, const char **k, size_t *kn)
{
	size_t i = 0, j;

	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	j = i;
	while (j < n && (isalnum((unsigned char)line[j]) || line[j] == '-'))
		j++;
	if (j == i)
		return 0;
	*k = line + i;
	*kn = j - i;
	return 1;
}

static bool key_is(const char *k, size_t kn, const char *want)
{
	return kn == strlen(want) && !strncasecmp(k, want, kn);
}

/* Appends A (N bytes) to the growing buffer. 0, or -1 out of memory. */
static int put(char **b, size_t *len, size_t *cap, const char *a, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = (*cap ? *cap * 2 : 4096) + n;
		char *nb = realloc(*b, c);

		if (!nb)
			return -1;
		*b = nb;
		*cap = c;
	}
	memcpy(*b + *len, a, n);
	*len += n;
	(*b)[*len] = '\0';
	return 0;
}

/* LINE (N bytes) with the secret userinfo of each URL taken out, appended. *TAKEN counts them. */
static int put_clean(char **b, size_t *len, size_t *cap, const char *line, size_t n, int *taken)
{
	size_t i = 0;

	while (i < n) {
		const char *s = memmem(line + i, n - i, "://", 3);
		size_t a, e, at = 0;

		if (!s)
			break;
		a = (size_t)(s - line) + 3;
		for (e = a; e < n && !strchr("/\"' \t\\]?#", line[e]); e++)
			if (line[e] == '@')
				at = e;
		if (at && userinfo_secret(line + a, at - a)) {
			if (put(b, len, cap, line + i, a - i) < 0)
				return -1;
			i = at + 1;
			(*taken)++;
		} else {
			if (put(b, len, cap, line + i, e - i) < 0)
				return -1;
			i = e;
		}
	}
	return put(b, len, cap, line + i, n - i);
}

/* The section header's remote name (LINE is "[remote "NAME"]"), else empty. */
static void section_remote(const char *line, size_t n, char *name, size_t namelen)
{
	const char *q1, *q2;

	name[0] = '\0';
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	if (n < 10 || strncasecmp(line, "[remote", 7) || !(q1 = memchr(line, '"', n)))
		return;
	q2 = memchr(q1 + 1, '"', n - (size_t)(q1 + 1 - line));
	if (q2 && (size_t)(q2 - q1 - 1) < namelen) {
		memcpy(name, q1 + 1, (size_t)(q2 - q1 - 1));
		name[q2 - q1 - 1] = '\0';
	}
}

/* Whether LINE (N bytes) is beyond what a line-by-line reading can clean with certainty: a
 * value continued on the next line (a backslash at its end), an escape or a partly quoted
 * value where a URL or a header could hide ("https://u:\"tok\"@h", "extraheader = \"), a URL
 * with a query (a token can ride there), or an include of another file, which git reads as
 * part of this one. */
static bool line_uncertain(const char *line, size_t n, bool header_key)
{
	size_t e = n, c = 0;

	while (c < n && (line[c] == ' ' || line[c] == '\t'))
		c++;
	if (c < n && (line[c] == '#' || line[c] == ';'))
		return false; /* a comment, to the end of its line */
	while (e && (line[e - 1] == '\n' || line[e - 1] == '\r'))
		e--;
	if (e && line[e - 1] == '\\')
		return true;
	const char *lb = memchr(line, '[', e);
	if (lb && (size_t)(lb - line) + 8 <= e && !strncasecmp(lb, "[include", 8))
		return true;
	bool url = memmem(line, e, "://", 3) || memchr(line, '@', e);
	if (!url && !header_key)
		return false;
	if (memchr(line, '\\', e))
		return true;
	const char *sch = memmem(line, e, "://", 3);
	if (sch && memchr(sch, '?', e - (size_t)(sch - line)))
		return true;
	/* Quotes: around the whole value ("key = \"...\"") or a section's name, nowhere else. */
	const char *eq = memchr(line, '=', e);
	size_t quotes = 0;

	for (size_t i = 0; i < e; i++)
		quotes += line[i] == '"';
	if (!quotes)
		return false;
	if (quotes != 2)
		return true;
	if (!eq) /* [url "https://..."]: the two quotes of the subsection */
		return false;
	const char *v = eq + 1;
	while (v < line + e && (*v == ' ' || *v == '\t'))
		v++;
	const char *end = line + e;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return !(end - v >= 2 && *v == '"' && end[-1] == '"');
}

/* Whether the key K (KN bytes) of LINE holds a credential itself: http.extraheader (an
 * Authorization header, a cookie), sendemail.smtpPass, the token keys tools keep in git's
 * config (github.token, hub.oauthtoken, gitlab.token), and a credential.helper that prints
 * a password or token inline. */
static bool secret_key(const char *k, size_t kn, const char *line, size_t n)
{
	static const char *const keys[] = { "extraheader", "smtppass", "token", "oauthtoken",
					    "password", "accesstoken", NULL };

	for (size_t i = 0; keys[i]; i++)
		if (key_is(k, kn, keys[i]))
			return true;
	return key_is(k, kn, "helper") &&
	       (memmem(line, n, "password", 8) || memmem(line, n, "token", 5) ||
		memmem(line, n, "secret", 6));
}

int share_git_includes(const char *config, size_t n, const char *paths[], size_t *lens,
		       size_t max)
{
	size_t found = 0, i = 0;
	bool in_include = false;

	while (i < n) {
		const char *line = config + i, *nl = memchr(line, '\n', n - i), *k;
		size_t ln = nl ? (size_t)(nl - line) : n - i, kn, c = 0;

		i += ln + 1;
		while (c < ln && (line[c] == ' ' || line[c] == '\t'))
			c++;
		if (c < ln && line[c] == '[') {
			in_include = ln - c >= 8 && !strncasecmp(line + c, "[include", 8);
			continue;
		}
		if (!in_include || !line_key(line, ln, &k, &kn) || !key_is(k, kn, "path"))
			continue;
		const char *v = memchr(line, '=', ln);
		if (!v)
			continue;
		v++;
		size_t vn = ln - (size_t)(v - line);
		while (vn && (*v == ' ' || *v == '\t' || *v == '"'))
			v++, vn--;
		while (vn && strchr(" \t\r\"", v[vn - 1]))
			vn--;
		if (vn && found < max) {
			paths[found] = v;
			lens[found++] = vn;
		}
	}
	return (int)found;
}

/* "git remote set-url [--push] NAME URL" for the value of a cleaned url/pushurl LINE. */
static void add_fix(char *fix, size_t fixlen, const char *remote, bool push, const char *line,
		    size_t n)
{
	const char *v = memchr(line, '=', n);
	size_t used = strlen(fix), vn;

	if (!v || !remote[0] || used >= fixlen)
		return;
	v++;
	vn = n - (size_t)(v - line);
	while (vn && (*v == ' ' || *v == '\t' || *v == '"'))
		v++, vn--;
	while (vn && strchr(" \t\r\n\"", v[vn - 1]))
		vn--;
	for (size_t i = 0; i < vn; i++)
		if (v[i] == '?' || v[i] == '#')
			vn = i; /* never a query or a fragment: either may carry a token */
	snprintf(fix + used, fixlen - used, "git remote set-url %s%s %.*s\n", push ? "--push " : "",
		 remote, (int)vn, v);
}

int share_git_clean(const char *config, size_t n, char **out, size_t *outn, char *fix,
		    size_t fixlen)
{
	char *b = NULL, remote[128] = "";
	size_t len = 0, cap = 0, i = 0;
	int taken = 0;

	*out = NULL;
	*outn = 0;
	if (fix && fixlen)
		fix[0] = '\0';
	while (i < n) {
		const char *line = config + i, *nl = memchr(line, '\n', n - i), *k;
		size_t ln = nl ? (size_t)(nl - line) + 1 : n - i, kn;
		int before = taken;
		size_t start = len;

		i += ln;
		if (line_uncertain(line, ln, line_key(line, ln, &k, &kn) && key_is(k, kn, "extraheader"))) {
			free(b);
			if (fix && fixlen)
				fix[0] = '\0';
			return -2;
		}
		if (!line_key(line, ln, &k, &kn) && memchr(line, '[', ln))
			section_remote(line, ln, remote, sizeof(remote));
		if (line_key(line, ln, &k, &kn) && secret_key(k, kn, line, ln)) {
			taken++; /* an Authorization header, a token, a password: the whole line goes */
			continue;
		}
		if (put_clean(&b, &len, &cap, line, ln, &taken) < 0) {
			free(b);
			return -1;
		}
		if (taken > before && fix && line_key(line, ln, &k, &kn) &&
		    (key_is(k, kn, "url") || key_is(k, kn, "pushurl")))
			add_fix(fix, fixlen, remote, key_is(k, kn, "pushurl"), b + start, len - start);
	}
	if (!taken) {
		free(b);
		return 0;
	}
	*out = b;
	*outn = len;
	return taken;
}
