/* SPDX-License-Identifier: Apache-2.0 */
/* broker/cred_source.h: the broker's secrets from its vault (vault_live.h), each entry by its
 * kind: a static value as it is, an OAuth 2 entry as the access token the broker obtains for it
 * (token_cache.h), which only the rule's destinations receive. */
#ifndef BULKHEAD_BROKER_CRED_SOURCE_H
#define BULKHEAD_BROKER_CRED_SOURCE_H

#include "broker/proxy.h"
#include "broker/vault_live.h"

/* The source over V (token_cache_init must have been called with V). */
const struct secret_source *cred_source_vault(struct vault_live *v);

#endif
