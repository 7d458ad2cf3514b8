/* SPDX-License-Identifier: Apache-2.0 */
/* session/share_scan_match.c: whether one file of a share holds a credential (share_scan.h's
 * table), from its name and, where the name alone would be noisy, from its first bytes. A
 * .env.example, a certificate's .pem or an .npmrc that names ${NPM_TOKEN} hold none. */
#include "session/share_scan.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

bool share_scan_ends(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !strcasecmp(s + n - k, tail);
}

/* The parent directory's name of PATH is DIR (".aws" for ".aws/credentials"). */
static bool parent_is(const char *path, const char *dir)
{
	const char *b = base(path), *p;
	size_t k = strlen(dir);

	if (b == path)
		return false;
	p = b - 1; /* the '/' */
	return (size_t)(p - path) >= k && !strncmp(p - k, dir, k) &&
	       (p - k == path || p[-k - 1] == '/');
}

/* A line of BUF (N bytes) that starts, after blanks, with KEY (case-insensitive) and has a
 * value after its '=' or ':' (or, with WORD_VALUE, after blanks: .netrc's "password x"). A
 * value that is only a ${VARIABLE} is none: the file names a secret kept elsewhere. */
static bool has_value(const char *buf, size_t n, const char *key, bool word_value)
{
	size_t k = strlen(key);

	for (size_t i = 0; i < n;) {
		const char *line = buf + i, *nl = memchr(line, '\n', n - i);
		size_t ln = nl ? (size_t)(nl - line) : n - i, j = 0;

		i += ln + 1;
		while (j < ln && (line[j] == ' ' || line[j] == '\t'))
			j++;
		for (; j + k <= ln; j++) {
			size_t v;

			if (strncasecmp(line + j, key, k))
				continue;
			v = j + k;
			while (v < ln && (line[v] == ' ' || line[v] == '\t' || line[v] == '"'))
				v++;
			if (v < ln && (line[v] == '=' || line[v] == ':'))
				v++;
			else if (!word_value || v == j + k)
				continue;
			while (v < ln && (line[v] == ' ' || line[v] == '\t' || line[v] == '"'))
				v++;
			if (v < ln && line[v] != '\r' && line[v] != '#' && line[v] != ',' &&
			    !(line[v] == '$' && v + 1 < ln && line[v + 1] == '{'))
				return true;
		}
	}
	return false;
}

/* A .env assignment with a value: "NAME=value" or "export NAME=value" (names as dotenv
 * libraries take them: letters, digits, '_', '-', '.'), a value that opens a quote and goes
 * on on the next lines counted too. A byte order mark before the first is skipped. */
static bool env_assigns(const char *buf, size_t n)
{
	if (n >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		buf += 3, n -= 3;
	for (size_t i = 0; i < n;) {
		const char *line = buf + i, *nl = memchr(line, '\n', n - i);
		size_t ln = nl ? (size_t)(nl - line) : n - i, j = 0, s;

		i += ln + 1;
		while (j < ln && (line[j] == ' ' || line[j] == '\t'))
			j++;
		if (ln - j > 7 && !strncmp(line + j, "export ", 7))
			j += 7;
		s = j;
		while (j < ln && (isalnum((unsigned char)line[j]) || line[j] == '_' ||
				  line[j] == '-' || line[j] == '.'))
			j++;
		if (j == s || isdigit((unsigned char)line[s]))
			continue;
		while (j < ln && (line[j] == ' ' || line[j] == '\t'))
			j++;
		if (j >= ln || line[j] != '=')
			continue;
		j++;
		bool quoted = false;
		while (j < ln &&
		       (line[j] == ' ' || line[j] == '\t' || line[j] == '"' || line[j] == '\'')) {
			quoted |= line[j] != ' ' && line[j] != '\t';
			j++;
		}
		if (quoted && (j >= ln || line[j] == '\r') && i < n)
			return true; /* K=" and the value on the lines that follow */
		if (j < ln && line[j] != '\r' && line[j] != '#')
			return true;
	}
	return false;
}

static bool contains(const char *buf, size_t n, const char *what)
{
	return buf && memmem(buf, n, what, strlen(what));
}

static bool env_name(const char *b)
{
	static const char *const tmpl[] = { ".example", ".sample", ".template",
					    ".dist",	".tmpl",   NULL };

	if (strcmp(b, ".env") && strncmp(b, ".env.", 5) && strcmp(b, ".env~") &&
	    strcmp(b, ".envrc") && !(strlen(b) > 4 && !strcasecmp(b + strlen(b) - 4, ".env")))
		return false; /* .env, .env.local, .env~, .envrc (direnv), prod.env */
	for (size_t i = 0; tmpl[i]; i++)
		if (share_scan_ends(b, tmpl[i]))
			return false;
	return true;
}

static bool key_store(const char *b)
{
	return share_scan_ends(b, ".p12") || share_scan_ends(b, ".pfx") ||
	       share_scan_ends(b, ".ppk") || share_scan_ends(b, ".jks") ||
	       share_scan_ends(b, ".keystore");
}

/* A git config: .git/config and .git/config.worktree, a submodule's under .git/modules/, a
 * linked worktree's under .git/worktrees/, a bare or mirror clone's (NAME.git/config), any
 * "config" in a git directory (GIT_DIR: a HEAD beside it, as in a separate git directory a
 * .git file points to), and .gitmodules, whose URLs git clones from. */
bool share_scan_git_config(const char *path, bool git_dir)
{
	const char *b = base(path);
	bool name = !strcmp(b, "config") || !strcmp(b, "config.worktree");
	size_t plen = (size_t)(b - path);

	if (!strcmp(b, ".gitmodules") || !strcmp(b, ".gitconfig"))
		return true; /* a shared home's or dotfiles' .gitconfig too */
	if (!strcmp(b, "config") && strlen(path) >= 17 &&
	    (!strcmp(path, ".config/git/config") || strstr(path, "/.config/git/config")))
		return true;
	if (!name)
		return false;
	return git_dir || parent_is(path, ".git") || strstr(path, ".git/modules/") == path ||
	       strstr(path, "/.git/modules/") || strstr(path, ".git/worktrees/") == path ||
	       strstr(path, "/.git/worktrees/") ||
	       (plen > 5 && !strncasecmp(b - 5, ".git/", 5)); /* NAME.git/config */
}

const char *share_scan_match(const char *path, bool git_dir, const char *buf, size_t n,
			     bool *read_it, enum share_found_kind *kind,
			     const struct share_scan_opts *o)
{
	const char *b = base(path);
	bool want = false;

	*kind = SHARE_FOUND_FILE;
	*read_it = false;
	for (size_t i = 0; o && i < o->npatterns; i++)
		if (!fnmatch(o->patterns[i], strchr(o->patterns[i], '/') ? path : b,
			     (strchr(o->patterns[i], '/') ? FNM_PATHNAME : 0) | FNM_CASEFOLD))
			return "a name the global policy lists";
	if (key_store(b))
		return "a key store";
	want = env_name(b) || !strcmp(b, ".git-credentials") || !strcmp(b, ".netrc") ||
	       !strcmp(b, "_netrc") || !strcmp(b, ".npmrc") || !strcmp(b, ".pypirc") ||
	       (!strcmp(b, "config.json") && parent_is(path, ".docker")) ||
	       ((!strcmp(b, "credentials") || !strcmp(b, "config")) && parent_is(path, ".aws")) ||
	       share_scan_ends(b, ".pem") || share_scan_ends(b, ".key") ||
	       (!strncasecmp(b, "id_", 3) && !share_scan_ends(b, ".pub")) ||
	       share_scan_ends(b, ".json") || share_scan_git_config(path, git_dir);
	if (!want)
		return NULL;
	if (!buf) {
		*read_it = true;
		return NULL;
	}
	if (env_name(b))
		return env_assigns(buf, n) ? "a .env with values" : NULL;
	if (!strcmp(b, ".git-credentials"))
		return contains(buf, n, "@") ? "git's stored credentials" : NULL;
	if (!strcmp(b, ".netrc") || !strcmp(b, "_netrc"))
		return has_value(buf, n, "password", true) ? "a .netrc password" : NULL;
	if (!strcmp(b, ".npmrc"))
		return has_value(buf, n, "_authToken", false) ||
				       has_value(buf, n, "_auth", false) ||
				       has_value(buf, n, "_password", false)
			       ? "an npm token"
			       : NULL;
	if (!strcmp(b, ".pypirc"))
		return has_value(buf, n, "password", false) ? "a PyPI password" : NULL;
	if (!strcmp(b, "config.json") && parent_is(path, ".docker"))
		return has_value(buf, n, "\"auth", false) ||
				       has_value(buf, n, "\"identitytoken", false) ||
				       has_value(buf, n, "\"password", false) ||
				       has_value(buf, n, "\"registrytoken", false)
			       ? "a registry login"
			       : NULL;
	if ((!strcmp(b, "credentials") || !strcmp(b, "config")) && parent_is(path, ".aws"))
		return has_value(buf, n, "aws_secret_access_key", false) ||
				       has_value(buf, n, "aws_session_token", false)
			       ? "AWS keys"
			       : NULL;
	if (share_scan_git_config(path, git_dir)) {
		char *clean = NULL;
		size_t cn = 0;
		int t = share_git_clean(buf, n, &clean, &cn, NULL, 0);

		if (clean)
			memset(clean, 0, cn);
		free(clean);
		*kind = t == -2 ? SHARE_FOUND_FILE : SHARE_FOUND_GIT_CONFIG;
		if (t == -2)
			return "a git config beyond a sure cleaning (a continued value, an escape "
			       "or "
			       "quote near a URL, a URL query, or an include)";
		if (t < 0)
			return "a git config that could not be checked (out of memory)";
		return t ? "a git remote or header with a credential" : NULL;
	}
	if (contains(buf, n, "PRIVATE KEY-----"))
		return share_scan_ends(b, ".json") ? "a service account's private key"
						   : "a private key";
	return NULL;
}

bool share_scan_skip_dir(const char *path, const char *name, const struct share_scan_opts *o)
{
	static const char *const deps[] = { "node_modules",  ".venv", "venv",
					    "__pycache__",   ".tox",  ".mypy_cache",
					    ".pytest_cache", NULL };

	for (size_t i = 0; deps[i]; i++)
		if (!strcmp(name, deps[i]))
			return true;
	/* .git's object store and refs hold no credential file: only its config is looked at. */
	if ((!strcmp(name, "objects") || !strcmp(name, "refs") || !strcmp(name, "logs") ||
	     !strcmp(name, "lfs")) &&
	    parent_is(path, ".git"))
		return true;
	for (size_t i = 0; o && i < o->nskip; i++)
		if (!strcmp(path, o->skip[i]))
			return true;
	return false;
}
