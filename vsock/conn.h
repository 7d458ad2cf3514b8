/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/conn.h: inside bulkhead-vsock — the connection table and each connection's host-side
 * Unix socket (connect, handshake, bounded buffering of guest data). */
#ifndef BULKHEAD_VSOCK_CONN_H
#define BULKHEAD_VSOCK_CONN_H

#include "vsock/vsock.h"

#include <sys/uio.h>

struct vsock_conn *vsock_conn_find(struct vsock_dev *d, uint32_t guest_port, uint32_t host_port);
/* A free slot (state still VC_FREE, fd -1), or NULL when the table is full. */
struct vsock_conn *vsock_conn_alloc(struct vsock_dev *d);
/* Closes fd, frees the buffer, marks the slot free. No packet is sent. */
void vsock_conn_free(struct vsock_dev *d, struct vsock_conn *c);
/* Resets c: RST owed to the guest, then freed. Counted in st.resets. */
void vsock_conn_reset(struct vsock_dev *d, struct vsock_conn *c);
/* Owes the guest an RST for (guest_port, host_port), bounded by VSOCK_RST_RING. */
void vsock_conn_queue_rst(struct vsock_dev *d, uint32_t guest_port, uint32_t host_port);

/* Registers c->fd with the device's epoll (edge-triggered). Returns 0 or -errno. */
int vsock_conn_watch(struct vsock_dev *d, struct vsock_conn *c);
/* Connects to PREFIX_port without blocking. Returns the fd or -errno. */
int vsock_conn_connect(const struct vsock_dev *d, uint32_t port);

/* Forwards len guest bytes (iov) to fd, buffering what fd does not take now. The caller has
 * checked the credit, so the buffer cannot overflow. Returns 0 or -errno (fd failed). */
int vsock_conn_write(struct vsock_dev *d, struct vsock_conn *c, const struct iovec *iov,
		     unsigned niov, uint32_t len);
/* Writes buffered bytes; returns 0 (maybe still some left) or -errno. */
int vsock_conn_flush(struct vsock_dev *d, struct vsock_conn *c);
/* After bytes left the buffer: half-closes fd or finishes the connection as the guest's
 * SHUTDOWN asked, and owes a credit update when the guest's view of our space got low. */
void vsock_conn_settle(struct vsock_dev *d, struct vsock_conn *c);

/* Host -> guest handshake: consumes exactly the "CONNECT <port>\n" line from fd.
 * Returns 1 with *port set, 0 when the line is not complete yet, -1 when it is bad or fd
 * closed. */
int vsock_conn_read_connect(struct vsock_conn *c, uint32_t *port);

#endif
