/* SPDX-License-Identifier: Apache-2.0 */
/* broker/hostname.h: the one canonical spelling of a host name or IP literal. Every name the
 * broker compares — policy deny_hosts and approval hosts, scope destinations, a request's URL
 * host and Host header, the CONNECT host and the TLS server name — goes through
 * hostname_canon() first, so two spellings of one host can never be judged differently. */
#ifndef BULKHEAD_BROKER_HOSTNAME_H
#define BULKHEAD_BROKER_HOSTNAME_H

#include <stddef.h>

#define HOSTNAME_MAX 253 /* RULES_HOST_MAX: a DNS name without its trailing dot */

/*
 * Canonicalises the LEN bytes at IN into OUT (NUL-terminated):
 *  - DNS names: lower case, one trailing dot removed; labels of 1..63 letters, digits, '-'
 *    or '_'; at most 253 bytes. Empty labels (a leading dot, two dots) are refused.
 *  - Non-ASCII names are refused: on the wire a name is always its ASCII (xn--) form, and
 *    converting a human's spelling (IDNA2003 and IDNA2008 disagree on some) could produce a
 *    name other than the one a client sends.
 *  - IPv4: only the dotted quad a.b.c.d in decimal without leading zeros. A name whose last
 *    label is numeric is an address (as URL parsers and inet_aton(3) read it), so the other
 *    spellings of an address (2130706433, 0177.0.0.1, 0x7f.1, 127.1) are refused.
 *  - IPv6: with or without brackets; written out as inet_ntop(3) does. Zone ids and the forms
 *    that carry an IPv4 address inside (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96)
 *    are refused: the plain IPv4 address is the one spelling of such a destination.
 * Returns 0, or -1 with *why set to a static sentence.
 */
int hostname_canon(const char *in, size_t len, char out[HOSTNAME_MAX + 1], const char **why);

/* The same for a policy pattern: an exact host, or "*." followed by a DNS name. */
int hostname_canon_pattern(const char *in, char out[HOSTNAME_MAX + 3], const char **why);

/* 1 when the canonical host H is an IP literal. */
int hostname_is_ip(const char *h);

#endif
