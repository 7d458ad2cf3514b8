/* SPDX-License-Identifier: Apache-2.0 */
/* broker/dest.h: turns a rule's destination into a connected TCP socket. The broker resolves
 * the name itself, refuses non-public addresses unless the destination lists that exact
 * address, and connects to the very address it checked (no second lookup to race). */
#ifndef BULKHEAD_BROKER_DEST_H
#define BULKHEAD_BROKER_DEST_H

#include <stddef.h>
#include <sys/socket.h>

#include "broker/policy.h"
#include "broker/rules.h"

/* 1 when ADDR is loopback, private, link-local, cloud metadata, multicast, unspecified or
 * otherwise not a public unicast address (IPv4-mapped IPv6 is judged as IPv4). */
int dest_addr_is_special(const struct sockaddr *addr);
/* 1 when ADDR may be used for D: public, or listed in D's allow_addresses. */
int dest_addr_allowed(const struct rules_dest *d, const struct sockaddr *addr);
#define DEST_REFUSED (-2)
/* Resolves and connects to D (timeout in ms per attempt), never to an address in P's
 * deny_cidrs (P may be NULL). Returns a socket; DEST_REFUSED when
 * every address was refused by policy; -1 when resolving or connecting failed. why gets one
 * line in both failure cases. */
int dest_connect(const struct rules_dest *d, const struct policy *p, int timeout_ms, char *why,
		 size_t whylen);

#endif
