/* SPDX-License-Identifier: Apache-2.0 */
/* broker/dest.c: address policy and connection set-up for upstreams. The check and the
 * connect use the same sockaddr, so DNS answers that change between the two cannot steer the
 * broker to an address that was never checked. */
#include "broker/dest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int v4_special(uint32_t a)
{
	return (a >> 24) == 0 ||		     /* 0.0.0.0/8 "this network" */
	       (a >> 24) == 10 ||		     /* private */
	       (a >> 24) == 127 ||		     /* loopback */
	       (a >> 22) == (100u << 2 | 1) ||	     /* 100.64.0.0/10 carrier-grade NAT */
	       (a >> 16) == (169u << 8 | 254) ||     /* link-local, 169.254.169.254 metadata */
	       (a >> 20) == (172u << 4 | 1) ||	     /* 172.16.0.0/12 private */
	       (a >> 16) == (192u << 8 | 168) ||     /* private */
	       (a >> 8) == (192u << 16 | 0 << 8) ||  /* 192.0.0.0/24 IETF protocol assignments */
	       (a >> 17) == (198u << 7 | 18 >> 1) || /* 198.18.0.0/15 benchmarking */
	       (a >> 28) >= 14;			     /* multicast, reserved, broadcast */
}

int dest_addr_is_special(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)addr;

		return v4_special(ntohl(in->sin_addr.s_addr));
	}
	if (addr->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)addr)->sin6_addr;
		uint32_t v4;

		if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
			memcpy(&v4, &a->s6_addr[12], 4);
			return v4_special(ntohl(v4));
		}
		return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) ||
		       IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_SITELOCAL(a) ||
		       IN6_IS_ADDR_MULTICAST(a) || (a->s6_addr[0] & 0xfe) == 0xfc || /* ULA */
		       (a->s6_addr[0] == 0x20 && a->s6_addr[1] == 0x01 && a->s6_addr[2] == 0x0d &&
			a->s6_addr[3] == 0xb8) || /* documentation */
		       (a->s6_addr[0] == 0x00 && a->s6_addr[1] == 0x64 && a->s6_addr[2] == 0xff &&
			a->s6_addr[3] == 0x9b); /* NAT64: would reach an IPv4 of any kind */
	}
	return 1;
}

static int same_ip(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return 0;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

int dest_addr_allowed(const struct rules_dest *d, const struct sockaddr *addr)
{
	size_t i;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return 0;
	for (i = 0; i < d->n_addrs; i++)
		if (same_ip(addr, &d->addrs[i]))
			return 1;
	return !dest_addr_is_special(addr);
}

static int connect_timeout(const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	struct pollfd p;
	int err = 0;
	socklen_t el = sizeof(err);

	if (fd < 0)
		return -1;
	if (connect(fd, sa, len) && errno != EINPROGRESS)
		goto fail;
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) ||
	    err) {
		errno = err ? err : ETIMEDOUT;
		goto fail;
	}
	if (fcntl(fd, F_SETFL, 0))
		goto fail;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

int dest_connect(const struct rules_dest *d, const struct policy *p, int timeout_ms, char *why,
		 size_t whylen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL, *ai;
	char port[8], shown[INET6_ADDRSTRLEN] = "", cidr[64] = "";
	int rc, fd = -1, refused = 0, err = 0, global = 0;

	snprintf(port, sizeof(port), "%u", d->port);
	rc = getaddrinfo(d->host, port, &hints, &res);
	if (rc) {
		snprintf(why, whylen, "cannot resolve %s: %s", d->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		const void *ip =
			ai->ai_family == AF_INET
				? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
				: (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;

		inet_ntop(ai->ai_family, ip, shown, sizeof(shown));
		/* The global policy's networks first: no rule's allow_addresses reach past them. */
		if (policy_addr_denied(p, ai->ai_addr, cidr, sizeof(cidr))) {
			global++;
			continue;
		}
		if (!dest_addr_allowed(d, ai->ai_addr)) {
			refused++;
			continue;
		}
		fd = connect_timeout(ai->ai_addr, ai->ai_addrlen, timeout_ms);
		if (fd >= 0)
			break;
		err = errno;
	}
	freeaddrinfo(res);
	if (fd >= 0)
		return fd;
	if (err) {
		snprintf(why, whylen, "cannot connect to %s (%s) port %u: %s", d->host, shown,
			 d->port, strerror(err));
		return -1;
	}
	if (global && !refused) {
		snprintf(why, whylen,
			 "denied by the global policy: %s resolves to %s, in forbidden network %s",
			 d->host, shown, cidr);
		return DEST_REFUSED;
	}
	if (refused) {
		snprintf(why, whylen,
			 "%s resolves to %s, a non-public address the rule does not allow", d->host,
			 shown);
		return DEST_REFUSED;
	}
	snprintf(why, whylen, "%s has no address", d->host);
	return -1;
}
