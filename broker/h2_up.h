/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_up.h: HTTP/2 toward an upstream whose TLS chose "h2" (ALPN), behind the HTTP/1.1
 * bytes proxy_io.c moves: what the proxy writes (one request's head and body, as it would
 * write them to an HTTP/1.1 upstream) goes out as that request's HEADERS and DATA; what it
 * reads is the answer as HTTP/1.1 (a head, a chunked body, trailers), so that the one
 * response path parses, scrubs and relays it. One request per connection. */
#ifndef BULKHEAD_BROKER_H2_UP_H
#define BULKHEAD_BROKER_H2_UP_H

#include <stddef.h>
#include <sys/types.h>

#include <openssl/ssl.h>

struct h2_up;

/* The session over SSL (its handshake done, ALPN "h2"), or NULL when out of memory. */
struct h2_up *h2_up_new(SSL *ssl);
void h2_up_free(struct h2_up *u);
/* Bytes of the HTTP/1.1 request: 0, or -1 when they are not a request HTTP/2 can carry or
 * the upstream is gone (h2_up_error says which). Blocks while the upstream's window holds
 * more than a little of the body back. */
int h2_up_write(struct h2_up *u, const void *b, size_t n);
/* Up to N bytes of the answer as HTTP/1.1: how many, 0 once it has all been read, -1 when
 * the upstream failed, or H2_UP_AGAIN when what the upstream sent held none (its socket
 * may be waited on again). Reads the socket only as far as it has bytes now. */
#define H2_UP_AGAIN (-2)
ssize_t h2_up_read(struct h2_up *u, void *b, size_t n);
/* 1 when h2_up_read has bytes (or the answer's end) without reading the socket. */
int h2_up_ready(const struct h2_up *u);
const char *h2_up_error(const struct h2_up *u);

#endif
