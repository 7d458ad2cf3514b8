/* SPDX-License-Identifier: Apache-2.0 */
/* lib/relpath.c: see relpath.h. */
#include "lib/relpath.h"

#include <limits.h>
#include <string.h>

/* The length of the UTF-8 sequence at S (N bytes left), or 0 when it is not one (overlong
 * forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t k;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		k = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		k = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		k = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((k == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (k == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return k;
}

int relpath_check(const char *p, size_t n, const char **why)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t comp = 0;

	if (!n)
		return *why = "an empty path", -1;
	if (n >= PATH_MAX)
		return *why = "a path too long", -1;
	if (p[0] == '/')
		return *why = "an absolute path (a rule names a path inside the share)", -1;
	for (size_t i = 0; i < n;) {
		size_t k;

		if (s[i] == '/') {
			if (comp == 0)
				return *why = "an empty component (//, or a trailing /)", -1;
			comp = 0;
			i++;
			continue;
		}
		if (s[i] < 0x20 || s[i] == 0x7f)
			return *why = "a control character (a newline, a tab, ...)", -1;
		if (!(k = utf8_len(s + i, n - i)))
			return *why = "bytes that are not UTF-8", -1;
		if (s[i] == '.' && (comp == 0) &&
		    (i + 1 == n || s[i + 1] == '/' ||
		     (s[i + 1] == '.' && (i + 2 == n || s[i + 2] == '/'))))
			return *why = "a . or .. component", -1;
		comp += k;
		if (comp > NAME_MAX)
			return *why = "a component longer than 255 bytes", -1;
		i += k;
	}
	if (comp == 0)
		return *why = "an empty component (//, or a trailing /)", -1;
	return 0;
}

int relpath_under(const char *p, const char *q)
{
	size_t n = strlen(q);

	return !strncmp(p, q, n) && (p[n] == '\0' || p[n] == '/');
}
