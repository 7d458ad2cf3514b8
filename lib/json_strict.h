/* SPDX-License-Identifier: Apache-2.0 */
/* lib/json_strict.h: strict JSON loading's key check — an object may hold only the keys its
 * loader knows, so a typo never silently widens or narrows what a file says. The global policy
 * (broker/policy.c) and a session's scope (broker/rules.c) both load this way, and each names
 * the unknown key in its own error (with its line and column, lib/json_where.h). */
#ifndef BULKHEAD_LIB_JSON_STRICT_H
#define BULKHEAD_LIB_JSON_STRICT_H

#include <jansson.h>

/* The first key of object O (in the file's order) that is not in KEYS (NULL-terminated), or
 * NULL when O holds only known keys. */
const char *json_strict_unknown(json_t *o, const char *const *keys);

#endif
