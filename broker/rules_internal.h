/* SPDX-License-Identifier: Apache-2.0 */
/* broker/rules_internal.h: what rules.c lends rules_grant.c; not an interface. */
#ifndef BULKHEAD_BROKER_RULES_INTERNAL_H
#define BULKHEAD_BROKER_RULES_INTERNAL_H

#include <stddef.h>

#include <jansson.h>

/* Only keys from ALLOWED (NULL-terminated) may appear in O; else -1 with
 * "WHERE: unknown key" in err. */
int rules_check_keys(json_t *o, const char *const *allowed, const char *where, char *err,
		     size_t errlen);

#endif
