/* SPDX-License-Identifier: Apache-2.0 */
/* broker/rules_internal.h: what rules.c lends rules_grant.c, rules_kinds.c and cred.c; not an
 * interface. */
#ifndef BULKHEAD_BROKER_RULES_INTERNAL_H
#define BULKHEAD_BROKER_RULES_INTERNAL_H

#include <stddef.h>

#include <jansson.h>

/* Only keys from ALLOWED (NULL-terminated) may appear in O; else -1 with
 * "WHERE: unknown key" in err. */
int rules_check_keys(json_t *o, const char *const *allowed, const char *where, char *err,
		     size_t errlen);

struct rules_dest;
/* One destination object (scheme, host, port, method, path_prefix, allow_addresses) into D;
 * also a credential's token endpoint (cred.c). 0, or -1 with err. */
int rules_parse_dest(json_t *o, struct rules_dest *d, const char *where, char *err, size_t errlen);
void rules_free_dest(struct rules_dest *d);

struct rules_secret;
/* rules_kinds.c: a secret's "oauth_scope", "github" and "s3" keys of O into S (after its
 * "inject"); "inject": {"aws_sigv4": O}. 0, or -1 with err. */
int rules_parse_kinds(json_t *o, struct rules_secret *s, const char *where, char *err,
		      size_t errlen);
int rules_parse_aws(json_t *o, struct rules_secret *s, const char *where, char *err, size_t errlen);

#endif
