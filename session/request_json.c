/* SPDX-License-Identifier: Apache-2.0 */
/* session/request_json.c: a session request from the API's JSON (request_json.h). Each value
 * is turned into the text the table's setter takes (the command line's form), so a JSON
 * request and an option are checked by the one code path, request_field_set(). */
#include "session/request_json.h"

#include "session/plan.h"
#include "session/request_fields.h"
#include "lib/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A text made here, kept alive in KEEP; NULL when out of memory. */
static const char *kept(json_t *keep, const char *text)
{
	json_t *s = json_string(text);
	if (!s || json_array_append_new(keep, s) < 0)
		return NULL;
	return json_string_value(s);
}

static int set(struct session_request *r, const struct request_field *f, const char *text,
	       char *err, size_t errlen)
{
	char name[80];

	if (!text) {
		snprintf(err, errlen, "\"%s\": out of memory", f->key);
		return -1;
	}
	snprintf(name, sizeof(name), "\"%s\"", f->key);
	return request_field_set(r, f, name, text, err, errlen) == 0 ? 0 : -1;
}

/* "A<SEP>B" (the setter's DIR:MODE or KEY=VALUE), kept alive in KEEP; NULL when out of memory. */
static const char *kept_join(json_t *keep, const char *a, char sep, const char *b)
{
	char *made = NULL;
	const char *text;

	if (asprintf(&made, "%s%c%s", a, sep, b) < 0)
		return NULL;
	text = kept(keep, made);
	free(made);
	return text;
}

static int wrong(const char *key, const char *shape, char *err, size_t errlen)
{
	snprintf(err, errlen, "\"%s\" must be %s", key, shape);
	return -1;
}

/* One scalar value as the setter's text: a string as is, a number in full. */
static const char *scalar(json_t *v, char buf[64])
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(buf, 64, "%lld", (long long)json_integer_value(v));
		return buf;
	}
	if (json_is_real(v)) {
		snprintf(buf, 64, "%.17g", json_real_value(v));
		return buf;
	}
	return NULL;
}

/* "work" with "work_ro": the table's DIR[:ro] text. */
static int work_field(json_t *o, struct session_request *r, json_t *keep, char *err, size_t errlen)
{
	json_t *w = json_object_get(o, "work"), *ro = json_object_get(o, "work_ro");
	if (ro && !json_is_boolean(ro))
		return wrong("work_ro", "true or false", err, errlen);
	if (!w)
		return ro ? wrong("work_ro", "given with \"work\"", err, errlen) : 0;
	if (!json_is_string(w) || json_string_value(w)[0] != '/')
		return wrong("work", "an absolute path", err, errlen);
	return set(r, request_field_by_key("work"),
		   kept_join(keep, json_string_value(w), ':', json_is_true(ro) ? "ro" : "rw"), err,
		   errlen);
}

/* A REQ_LIST field: an array of strings, or for "work_rules" an object PATH: MODE. */
static int list_field(const struct request_field *f, json_t *v, struct session_request *r,
		      json_t *keep, char *err, size_t errlen)
{
	if (!strcmp(f->key, "work_rules")) {
		if (!json_is_object(v))
			return wrong("work_rules", "an object of \"PATH\": \"rw|ro|hidden\"", err,
				     errlen);
		const char *path;
		json_t *mode;
		json_object_foreach(v, path, mode)
		{
			if (!json_is_string(mode))
				return wrong("work_rules",
					     "an object of \"PATH\": \"rw|ro|hidden\"", err,
					     errlen);
			if (set(r, f, kept_join(keep, path, ':', json_string_value(mode)), err,
				errlen) < 0)
				return -1;
		}
		return 0;
	}
	if (!json_is_array(v))
		return wrong(f->key, "an array of strings", err, errlen);
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e))
			return wrong(f->key, "an array of strings", err, errlen);
		if (set(r, f, json_string_value(e), err, errlen) < 0)
			return -1;
	}
	return 0;
}

/* "env": {"KEY": "VALUE"}, as -e KEY=VALUE. */
static int env_field(json_t *v, struct session_request *r, json_t *keep, char *err, size_t errlen)
{
	if (!json_is_object(v))
		return wrong("env", "an object of \"KEY\": \"VALUE\" strings", err, errlen);
	const char *k;
	json_t *val;
	json_object_foreach(v, k, val)
	{
		if (!json_is_string(val) || !*k || strchr(k, '='))
			return wrong("env", "an object of \"KEY\": \"VALUE\" strings", err, errlen);
		if (r->nenv == RUN_MAX_ENV) {
			snprintf(err, errlen, "\"env\": more than %d variables", RUN_MAX_ENV);
			return -1;
		}
		const char *text = kept_join(keep, k, '=', json_string_value(val));
		if (!text) {
			snprintf(err, errlen, "\"env\": out of memory");
			return -1;
		}
		r->env[r->nenv++] = (char *)text;
	}
	return 0;
}

int request_from_json(json_t *o, struct session_request *r, json_t *keep, char *err, size_t errlen)
{
	if (!json_is_object(o))
		return wrong("the request", "a JSON object", err, errlen);
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		const struct request_field *f = request_field_by_key(key);
		char num[64];
		if (!strcmp(key, "work") || !strcmp(key, "work_ro"))
			continue; /* together, below */
		if (!f) {
			snprintf(err, errlen, "unknown field \"%.64s\"", key);
			return -1;
		}
		if (f->type == REQ_LIST) {
			if (list_field(f, v, r, keep, err, errlen) < 0)
				return -1;
		} else if (!strcmp(key, "env")) {
			if (env_field(v, r, keep, err, errlen) < 0)
				return -1;
		} else if (f->type == REQ_OWN || f->type == REQ_FLAG) {
			snprintf(err, errlen, "\"%s\" is not taken in a request", key);
			return -1;
		} else {
			bool number = f->type == REQ_UINT || f->type == REQ_SECONDS;
			if (number ? !json_is_number(v) : !json_is_string(v))
				return wrong(key, number ? "a number" : "a string", err, errlen);
			if (set(r, f, scalar(v, num), err, errlen) < 0)
				return -1;
		}
	}
	return work_field(o, r, keep, err, errlen);
}

json_t *request_json_read(int fd, char *err, size_t errlen)
{
	size_t n = 0;
	char *buf = io_read_all(fd, REQUEST_JSON_MAX, &n);
	if (!buf) {
		if (errno == ERANGE)
			snprintf(err, errlen, "the request is over %d bytes", REQUEST_JSON_MAX);
		else
			snprintf(err, errlen, "cannot read the request: %s", strerror(errno));
		return NULL;
	}
	json_error_t je;
	json_t *o = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	if (!o)
		snprintf(err, errlen, "the request is not JSON: line %d column %d: %s", je.line,
			 je.column, je.text);
	else if (!json_is_object(o)) {
		snprintf(err, errlen, "the request must be a JSON object");
		json_decref(o);
		o = NULL;
	}
	return o;
}
