/* SPDX-License-Identifier: Apache-2.0 */
/* broker/reqpath.c: the request target's canonical spelling (see reqpath.h). */
#include "broker/reqpath.h"
#include "lib/hex.h"

#include <string.h>

static int unreserved(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* Decodes the escapes of unreserved characters and upper-cases the others' hex. Returns the
 * length written, or -1 for a '%' without two hex digits after it. */
static long canon(const char *in, size_t n, char *out)
{
	static const char hexd[] = "0123456789ABCDEF";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int hi, lo, v;

		if (in[i] != '%') {
			out[o++] = in[i];
			continue;
		}
		if (i + 2 >= n || (hi = hex_digit(in[i + 1])) < 0 ||
		    (lo = hex_digit(in[i + 2])) < 0)
			return -1;
		v = hi << 4 | lo;
		if (unreserved(v)) {
			out[o++] = (char)v;
		} else {
			out[o++] = '%';
			out[o++] = hexd[hi];
			out[o++] = hexd[lo];
		}
		i += 2;
	}
	out[o] = '\0';
	return (long)o;
}

/* What a server may read as another path than the one judged: see reqpath.h. */
static const char *path_refused(const char *p, size_t n)
{
	size_t i, seg = 1;

	if (!n || p[0] != '/')
		return "the path must start with '/'";
	if (memchr(p, ';', n))
		return "a path parameter (';') in the path";
	for (i = 1; i <= n; i++) {
		size_t sl;

		if (i < n && p[i] != '/')
			continue;
		sl = i - seg;
		if (!sl && i < n)
			return "an empty segment ('//') in the path";
		if ((sl == 1 && p[seg] == '.') || (sl == 2 && p[seg] == '.' && p[seg + 1] == '.'))
			return "a dot segment in the path";
		seg = i + 1;
	}
	for (i = 0; i + 2 < n; i++)
		if (p[i] == '%' && (!strncmp(p + i, "%2F", 3) || !strncmp(p + i, "%5C", 3) ||
				    !strncmp(p + i, "%00", 3)))
			return "an encoded slash, backslash or NUL in the path";
	if (memchr(p, '\\', n))
		return "a backslash in the path";
	return NULL;
}

int reqpath_canon_path(const char *in, size_t n, char *out, const char **why)
{
	long len = canon(in, n, out);

	if (len < 0) {
		*why = "'%' not followed by two hex digits in the path";
		return -1;
	}
	*why = path_refused(out, (size_t)len);
	return *why ? -1 : 0;
}

int reqpath_canon_query(const char *in, size_t n, char *out, const char **why)
{
	if (canon(in, n, out) < 0) {
		*why = "'%' not followed by two hex digits in the query";
		return -1;
	}
	return 0;
}
