/* SPDX-License-Identifier: Apache-2.0 */
/* broker/h2_front.h: HTTP/2 from the guest, inside a CONNECT tunnel whose TLS chose "h2". */
#ifndef BULKHEAD_BROKER_H2_FRONT_H
#define BULKHEAD_BROKER_H2_FRONT_H

struct conn;

/* Serves the tunnel C (its TLS with the guest is up, ALPN "h2") until the guest or the broker
 * ends it. Each stream's request becomes an HTTP/1.1 request to a connection state of its own
 * (proxy_tunnel_stream), served on a thread of its own through a socket pair: decided,
 * credentialed, scrubbed and recorded exactly as a request of an HTTP/1.1 tunnel is. Its
 * answer goes back to the guest as the stream's HEADERS, DATA and trailers. Returns when
 * every stream's thread has ended. */
void h2_front_serve(struct conn *c);

#endif
