/* SPDX-License-Identifier: Apache-2.0 */
/* broker/aws_s3.h: which S3 objects a request touches, against a rule's "s3" list of
 * "BUCKET/KEY-PREFIX" (rules.h). The bucket comes from a virtual-hosted name
 * (BUCKET.s3[.-]...) or else the path's first segment; the key is the rest of the path, decoded.
 *
 * Allowed: any request on an object whose key begins with a listed prefix of its bucket (with
 * the object sub-resources uploads, uploadId, partNumber, versionId, tagging, attributes,
 * x-id and response-*), its copy source (x-amz-copy-source) within the list too; HEAD of a
 * listed bucket; GET listing it (list-type, prefix, delimiter, max-keys, continuation-token,
 * start-after, marker, encoding-type, fetch-owner) with a prefix within a listed one.
 * Everything else on a bucket (its policy, ACL, deleting many keys at once, ...) is refused. */
#ifndef BULKHEAD_BROKER_AWS_S3_H
#define BULKHEAD_BROKER_AWS_S3_H

#include <stddef.h>

#include "broker/rules.h"

/* METHOD, HOST and the canonical PATH and QUERY (QLEN bytes) of a request signed with S; COPY
 * (COPYLEN bytes) its x-amz-copy-source, or NULL. 0: allowed; -1 with WHY (one line naming
 * the secret, the bucket and the key). */
int aws_s3_allowed(const struct rules_secret *s, const char *method, const char *host,
		   const char *path, const char *query, size_t qlen, const char *copy,
		   size_t copylen, char *why, size_t whylen);

#endif
