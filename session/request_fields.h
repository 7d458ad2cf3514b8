/* SPDX-License-Identifier: Apache-2.0 */
/* session/request_fields.h: every field of a session request (struct session_request,
 * session/plan.h) that a caller may set, in one table: its name in the API's JSON and in the
 * docs, its option of `bulkhead run` and `start`, its type and range, its default, and whether
 * it can be bound to a guest that is already up (a warm pool's). The CLI's options and --help
 * (cli/session_opts.c), the API's create (serve/sessions.c) and the OCI bundle's resources
 * (oci/bundle.c) take their names and bounds from here, and tests/e2e/test_request_schema.sh
 * checks docs/openapi.json and docs/API.md against it: a new session option is a row here. */
#ifndef BULKHEAD_SESSION_REQUEST_FIELDS_H
#define BULKHEAD_SESSION_REQUEST_FIELDS_H

#include "session/request_limits.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum request_type {
	REQ_UINT,    /* unsigned, whole, from min to max */
	REQ_SECONDS, /* double, more than min (0), at most max */
	REQ_TEXT,    /* const char *, not empty */
	REQ_CHOICE,  /* const char *, one of `choices` ("refuse|hide") */
	REQ_LIST,    /* const char *[], its count a size_t at count_off, at most max entries */
	REQ_FLAG,    /* bool, no value */
	REQ_OWN,     /* parsed by its caller's own code (engine, env, the start-only options) */
};

/* When a field's value reaches the session: at boot (a pool guest cannot take another
 * value), or per session after boot. */
enum request_bind {
	REQ_AT_BOOT,
	REQ_AFTER_BOOT,
};

struct request_field {
	const char *key;     /* the API's JSON key, and the field's name in the docs; NULL: none */
	const char *flag;    /* `run`/`start`'s long option; NULL: not on the command line */
	char short_flag;     /* its one-letter form, or 0 */
	const char *metavar; /* the value's name in --help; NULL: a flag without a value */
	enum request_type type;
	double min, max;
	const char *choices;
	size_t off, count_off; /* where in struct session_request */
	unsigned deflt;	       /* REQ_UINT: the default the plan applies (0: none said here) */
	enum request_bind bind;
	const char *help; /* --help's words (a range and a default are added from the row) */
};

extern const struct request_field request_fields[];
extern const size_t request_nfields;

const struct request_field *request_field_by_key(const char *key);
const struct request_field *request_field_by_flag(const char *flag);

struct session_request;
/* The command line's TEXT for field F into R. 0, or -1 with ERR saying what F takes, after NAME:
 * the words that name what was given, as the caller's user gave it ("--mem '9'", "\"mem_mib\""). */
int request_field_set(struct session_request *r, const struct request_field *f, const char *name,
		      const char *text, char *err, size_t errlen);
/* Whether the number V fits field F (REQ_UINT: whole). 0, or -1 with ERR naming F's key. */
int request_field_number_ok(const struct request_field *f, double v, char *err, size_t errlen);
/* Whether TEXT is one of F's choices. */
bool request_field_choice_ok(const struct request_field *f, const char *text);

/* --help's option lines for every field with a flag, wrapped to 88 columns. */
void request_fields_help(FILE *out);
/* The table as JSON (one object per field), for the docs' checks. */
void request_fields_json(FILE *out);

#endif
