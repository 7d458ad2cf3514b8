/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/vsock.h: the virtio-vsock device of bulkhead-vsock — stream connections between the
 * guest and host Unix sockets (hybrid semantics), with credit-based flow control both ways. */
#ifndef BULKHEAD_VSOCK_VSOCK_H
#define BULKHEAD_VSOCK_VSOCK_H

#include "vsock/virtq.h"
#include "vsock/vmem.h"

#include <linux/virtio_vsock.h>
#include <stdbool.h>
#include <stdint.h>

#define VSOCK_Q_RX    0
#define VSOCK_Q_TX    1
#define VSOCK_Q_EVENT 2
#define VSOCK_NQUEUES 3

#define VSOCK_MAX_CONNS 128	    /* both directions together; more are refused with RST */
#define VSOCK_BUF_ALLOC (256 << 10) /* our per-connection receive buffer, told to the guest */
#define VSOCK_MAX_PKT	(64 << 10)  /* largest payload we accept or send in one packet */
#define VSOCK_RST_RING	64	    /* RSTs for connections that no longer exist, waiting for rx */
#define VSOCK_HOST_CID	2	    /* VMADDR_CID_HOST */
#define VSOCK_HDR_LEN	((uint32_t)sizeof(struct virtio_vsock_hdr))
/* "CONNECT 4294967295\n" is 19 bytes; anything longer without a newline is refused. */
#define VSOCK_CONNECT_LINE_MAX 32

/* epoll tags: kind in the high 32 bits, index in the low ones. */
enum vsock_tag { VSOCK_TAG_CTRL = 1, VSOCK_TAG_LISTEN, VSOCK_TAG_KICK, VSOCK_TAG_CONN };
#define VSOCK_TAG(kind, idx) (((uint64_t)(kind) << 32) | (uint32_t)(idx))

enum vsock_state {
	VC_FREE = 0,
	VC_HANDSHAKE,	/* host connected to the main socket; reading "CONNECT <port>\n" */
	VC_REQUESTED,	/* we sent (or will send) REQUEST to the guest; waiting for RESPONSE */
	VC_ESTABLISHED, /* data flows */
};

/* Control packets a connection owes the guest, sent as rx buffers become available. */
#define VC_P_REQUEST  (1u << 0)
#define VC_P_RESPONSE (1u << 1)
#define VC_P_CREDIT   (1u << 2)
#define VC_P_SHUTDOWN (1u << 3)

struct vsock_conn {
	enum vsock_state state;
	int fd;		    /* the host Unix socket, non-blocking */
	uint32_t host_port; /* our side's port (CID 2) */
	uint32_t guest_port;
	unsigned pending;	 /* VC_P_* */
	uint32_t shutdown_flags; /* for VC_P_SHUTDOWN */
	/* host -> guest: what the guest lets us send */
	uint32_t rx_cnt;	 /* payload bytes we have put into the guest's rx queue */
	uint32_t peer_buf_alloc; /* the guest's receive buffer, from its headers */
	uint32_t peer_fwd_cnt;	 /* bytes the guest says it has consumed */
	/* guest -> host: what we let the guest send */
	uint32_t tx_cnt;       /* payload bytes received from the guest */
	uint32_t fwd_cnt;      /* of those, bytes written to fd */
	uint32_t fwd_cnt_sent; /* fwd_cnt as last told to the guest */
	uint8_t *buf; /* bytes received but not yet written to fd (ring, VSOCK_BUF_ALLOC) */
	uint32_t buf_head, buf_len;
	uint32_t peer_shutdown; /* VIRTIO_VSOCK_SHUTDOWN_* flags the guest sent */
	bool readable;		/* fd had data last time we looked (edge-triggered) */
	bool host_eof;		/* fd said EOF; SHUTDOWN(SEND) owed or sent */
	bool wr_shut;		/* we did shutdown(fd, SHUT_WR) */
	char line[VSOCK_CONNECT_LINE_MAX];
};

struct vsock_stats {
	uint64_t bad_chain;  /* tx chain with writable buffers or shorter than a header */
	uint64_t bad_addr;   /* src/dst CID not guest -> host */
	uint64_t bad_type;   /* not a stream packet */
	uint64_t bad_len;    /* len beyond the buffers, above VSOCK_MAX_PKT, or on a non-RW op */
	uint64_t bad_op;     /* unknown op */
	uint64_t bad_state;  /* op out of order for the connection's state */
	uint64_t bad_credit; /* guest sent beyond our credit, or claimed to consume unsent bytes */
	uint64_t unknown_conn;	/* packet for no connection (answered with RST) */
	uint64_t refused;	/* guest REQUEST to a port nothing listens on, or table full */
	uint64_t resets;	/* connections we reset */
	uint64_t rst_dropped;	/* RST ring full */
	uint64_t bad_handshake; /* host side sent something other than CONNECT <port>\n */
	uint64_t connections;	/* connections established */
};

struct vsock_dev {
	struct vmem mem;
	struct vq q[VSOCK_NQUEUES];
	uint64_t guest_cid;
	const char *uds_prefix; /* host side: PREFIX (host -> guest) and PREFIX_P (guest -> host) */
	int epfd;		/* where connection fds are registered, or -1 (tests) */
	struct vsock_conn conns[VSOCK_MAX_CONNS];
	unsigned rr; /* round-robin start for the rx pump */
	uint32_t next_host_port;
	struct {
		uint32_t guest_port, host_port;
	} rst[VSOCK_RST_RING];
	unsigned rst_head, rst_count;
	struct vsock_stats st;
};

void vsock_dev_init(struct vsock_dev *d, uint64_t guest_cid, const char *uds_prefix, int epfd);
/* Closes every connection without a packet (the guest's driver stopped: its sockets are
 * gone); the host programs see their sockets closed. */
void vsock_dev_drop_conns(struct vsock_dev *d);
/* That, plus the rings' fds and the memory table: back to the state before SET_OWNER. */
void vsock_dev_reset(struct vsock_dev *d);

/* Makes fd (or -1: none) ring q's kick eventfd, watched by the device's epoll under
 * VSOCK_TAG_KICK. The old one is taken out of the epoll set before it is closed: the front end
 * (and KVM's ioeventfd) still hold that eventfd, so closing our copy alone would leave its
 * registration alive and firing. Returns 0 or -errno (fd is then not watched, but kept). */
int vsock_dev_set_kick(struct vsock_dev *d, unsigned q, int fd);

/* Handles every available tx packet, then fills rx, then notifies the guest. */
void vsock_kick(struct vsock_dev *d);

/* A host Unix socket connected to the main socket (host -> guest). Takes fd. */
void vsock_host_accept(struct vsock_dev *d, int fd);

/* epoll said something about connection idx (EPOLLIN/OUT/HUP/ERR). */
void vsock_host_event(struct vsock_dev *d, unsigned idx, uint32_t events);

/* Number of connections in use (tests, stats). */
unsigned vsock_conn_count(const struct vsock_dev *d);

#endif
