/* SPDX-License-Identifier: Apache-2.0 */
/* lib/sha256_hex.h: the first DIGITS hex digits of a SHA-256, for names made from what a
 * cached thing depends on (templates, the KVM probe's verdicts). */
#ifndef BULKHEAD_LIB_SHA256_HEX_H
#define BULKHEAD_LIB_SHA256_HEX_H

#include <stddef.h>

/* Writes DIGITS (even, at most 64) lowercase hex digits and a NUL into hex. 0, or -1. */
int sha256_hex(const void *p, size_t len, char *hex, size_t digits);

#endif
