/* SPDX-License-Identifier: Apache-2.0 */
/* lib/json_where.c: a small scanner that walks a JSON text to a path (see the header). It
 * only skips values and compares keys; jansson has already parsed the text for meaning. */
#include "lib/json_where.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct scan {
	const char *p;
};

static void skip_ws(struct scan *s)
{
	while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')
		s->p++;
}

/* Skips a string (s->p at its opening quote); returns its raw body in *b / *n. */
static int skip_string(struct scan *s, const char **b, size_t *n)
{
	const char *start = ++s->p;

	while (*s->p && *s->p != '"') {
		if (*s->p == '\\' && s->p[1])
			s->p++;
		s->p++;
	}
	if (*s->p != '"')
		return -1;
	*b = start;
	*n = (size_t)(s->p - start);
	s->p++;
	return 0;
}

static int skip_value(struct scan *s, int depth)
{
	const char *b;
	size_t n;

	if (depth > 64)
		return -1;
	skip_ws(s);
	if (*s->p == '"')
		return skip_string(s, &b, &n);
	if (*s->p == '{' || *s->p == '[') {
		char close = *s->p == '{' ? '}' : ']';

		s->p++;
		skip_ws(s);
		if (*s->p == close) {
			s->p++;
			return 0;
		}
		for (;;) {
			skip_ws(s);
			if (close == '}') {
				if (*s->p != '"' || skip_string(s, &b, &n))
					return -1;
				skip_ws(s);
				if (*s->p++ != ':')
					return -1;
			}
			if (skip_value(s, depth + 1))
				return -1;
			skip_ws(s);
			if (*s->p == ',') {
				s->p++;
				continue;
			}
			if (*s->p != close)
				return -1;
			s->p++;
			return 0;
		}
	}
	if (!*s->p)
		return -1;
	while (*s->p && (isalnum((unsigned char)*s->p) || strchr("+-.", *s->p)))
		s->p++;
	return 0;
}

/* One path component: a key (into key/klen) or an index (*idx >= 0). */
static const char *next_part(const char *path, const char **key, size_t *klen, long *idx)
{
	char *end;

	if (*path == '.')
		path++;
	if (*path == '[') {
		*idx = strtol(path + 1, &end, 10);
		if (*end != ']' || *idx < 0)
			return NULL;
		return end + 1;
	}
	*idx = -1;
	*key = path;
	*klen = strcspn(path, ".[");
	return path + *klen;
}

int json_where(const char *text, const char *path, int *line, int *column)
{
	struct scan s = { text };
	const char *at;

	while (*path) {
		const char *key = NULL, *b;
		size_t klen = 0, n;
		long idx, i;
		int found = 0;

		path = next_part(path, &key, &klen, &idx);
		if (!path)
			return -1;
		skip_ws(&s);
		if (idx >= 0) {
			if (*s.p++ != '[')
				return -1;
			for (i = 0; !found; i++) {
				skip_ws(&s);
				if (*s.p == ']')
					return -1;
				if (i == idx) {
					found = 1;
					break;
				}
				if (skip_value(&s, 0))
					return -1;
				skip_ws(&s);
				if (*s.p++ != ',')
					return -1;
			}
			continue;
		}
		if (*s.p++ != '{')
			return -1;
		while (!found) {
			skip_ws(&s);
			if (*s.p != '"' || skip_string(&s, &b, &n))
				return -1;
			skip_ws(&s);
			if (*s.p++ != ':')
				return -1;
			if (n == klen && !memcmp(b, key, n)) {
				found = 1;
				break;
			}
			if (skip_value(&s, 0))
				return -1;
			skip_ws(&s);
			if (*s.p++ != ',')
				return -1;
		}
	}
	skip_ws(&s);
	*line = 1;
	*column = 1;
	for (at = text; at < s.p; at++) {
		if (*at == '\n') {
			(*line)++;
			*column = 1;
		} else {
			(*column)++;
		}
	}
	return 0;
}
