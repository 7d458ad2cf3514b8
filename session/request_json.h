/* SPDX-License-Identifier: Apache-2.0 */
/* session/request_json.h: a session request from the API's JSON (docs/API.md, "Create a
 * session"): the same object a client posts to `bulkhead serve` is what `bulkhead start
 * --request` reads, and what the daemon hands the supervisor it runs. Every key is a field
 * of the request table (session/request_fields.h) checked by that table, in the API's shape:
 * numbers as numbers, "work" with "work_ro", "work_rules" as {"PATH": "rw|ro|hidden"},
 * "share_secrets_allow" and lists as arrays, "env" as {"KEY": "VALUE"}. */
#ifndef BULKHEAD_SESSION_REQUEST_JSON_H
#define BULKHEAD_SESSION_REQUEST_JSON_H

#include <jansson.h>
#include <stddef.h>

/* The largest request document read (a file or a pipe). */
#define REQUEST_JSON_MAX (1 << 20)

struct session_request;

/* Sets R's fields from O. R points into O and into KEEP (an array the texts made here are
 * added to): both must outlive R. 0, or -1 with ERR naming the key and what it takes; an
 * unknown key is refused. */
int request_from_json(json_t *o, struct session_request *r, json_t *keep, char *err,
		      size_t errlen);

/* The JSON object read from FD (at most REQUEST_JSON_MAX bytes; duplicate keys refused), or
 * NULL with ERR. */
json_t *request_json_read(int fd, char *err, size_t errlen);

#endif
