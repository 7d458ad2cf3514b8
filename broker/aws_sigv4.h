/* SPDX-License-Identifier: Apache-2.0 */
/* broker/aws_sigv4.h: AWS Signature Version 4 (the "AWS4-HMAC-SHA256" scheme of AWS's
 * "Signature Version 4 signing process"), done by the broker with a key the guest never holds.
 * The guest's SDK signs with placeholder keys; the broker drops that signature and signs the
 * request it sends upstream, over exactly the bytes it sends. */
#ifndef BULKHEAD_BROKER_AWS_SIGV4_H
#define BULKHEAD_BROKER_AWS_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "broker/secbuf.h"

#define AWS_NAME_MAX 64 /* a service or region name */
/* The hex SHA-256 of no bytes: the payload hash of a request without a body. */
#define AWS_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct aws_key {
	const char *id, *secret;
	const char *token; /* temporary credentials' session token, or NULL */
};

/* The lower-case hex SHA-256 of N bytes at B, as SigV4 writes hashes (payload, request). */
void aws_sigv4_sha256_hex(const void *b, size_t n, char out[65]);

/* An Authorization value (LEN bytes) the guest's SDK wrote: when it is "AWS4-HMAC-SHA256
 * Credential=ID/DATE/REGION/SERVICE/aws4_request, ...", the region and service it signed
 * for. 1: found; 0: not a SigV4 value (another scheme); -1: a SigV4 value that does not parse. */
int aws_sigv4_scope_of(const char *val, size_t len, char region[AWS_NAME_MAX + 1],
		       char service[AWS_NAME_MAX + 1]);

/* Whether an x-amz-content-sha256 value (LEN bytes) can be signed as it is: 64 hex digits,
 * UNSIGNED-PAYLOAD, or STREAMING-UNSIGNED-PAYLOAD-TRAILER (aws-chunked without chunk
 * signatures). 0, or -1 with *WHY: chunk-signed streaming (each chunk's signature chains from
 * the guest's, which the broker replaces) and anything else. */
int aws_sigv4_payload_ok(const char *val, size_t len, const char **why);

/* HEAD (LEN bytes): a request head as the broker sends it ("METHOD TARGET HTTP/1.1", its fields,
 * with or without the blank line that ends it). OUT gets the same head without any
 * Authorization, X-Amz-Date or X-Amz-Security-Token field, then X-Amz-Date (NOW), the key's
 * session token and the Authorization that signs it for REGION and SERVICE: Host, Content-Type,
 * Content-MD5 and every X-Amz-* field, the target (the path encoded once more for services but
 * s3, as AWS does) and PAYLOAD (the body's hex SHA-256, or what x-amz-content-sha256 says).
 * 0, or -1: a head that does not parse, or out of memory. */
int aws_sigv4_sign(const char *head, size_t len, const struct aws_key *k, const char *region,
		   const char *service, const char *payload, time_t now, struct secbuf *out);

#endif
