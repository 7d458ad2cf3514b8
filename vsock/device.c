/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/device.c: the vsock packet state machine — guest packets from the tx queue (every
 * header field checked; a violation resets that connection and is counted) and the rx pump that
 * feeds the guest control packets and host data within the guest's credit. */
#include "vsock/conn.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* First port for host-initiated connections: far from the small ports guests listen on. */
#define HOST_PORT_BASE (1u << 30)

void vsock_dev_init(struct vsock_dev *d, uint64_t guest_cid, const char *uds_prefix, int epfd)
{
	memset(d, 0, sizeof(*d));
	for (unsigned i = 0; i < VSOCK_NQUEUES; i++)
		vq_init(&d->q[i]);
	for (unsigned i = 0; i < VSOCK_MAX_CONNS; i++)
		d->conns[i].fd = -1;
	d->guest_cid = guest_cid;
	d->uds_prefix = uds_prefix;
	d->epfd = epfd;
	d->next_host_port = HOST_PORT_BASE;
}

void vsock_dev_drop_conns(struct vsock_dev *d)
{
	for (unsigned i = 0; i < VSOCK_MAX_CONNS; i++)
		if (d->conns[i].state != VC_FREE)
			vsock_conn_free(d, &d->conns[i]);
	d->rst_count = 0;
}

int vsock_dev_set_kick(struct vsock_dev *d, unsigned q, int fd)
{
	struct vq *vq = &d->q[q];
	if (vq->kick_fd >= 0) {
		if (d->epfd >= 0)
			epoll_ctl(d->epfd, EPOLL_CTL_DEL, vq->kick_fd, NULL);
		close(vq->kick_fd);
	}
	vq->kick_fd = fd;
	if (fd < 0 || d->epfd < 0)
		return 0;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = VSOCK_TAG(VSOCK_TAG_KICK, q) };
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void vsock_dev_reset(struct vsock_dev *d)
{
	vsock_dev_drop_conns(d);
	for (unsigned i = 0; i < VSOCK_NQUEUES; i++) {
		vsock_dev_set_kick(d, i, -1);
		if (d->q[i].call_fd >= 0)
			close(d->q[i].call_fd);
		vq_init(&d->q[i]);
	}
	vmem_clear(&d->mem);
}

unsigned vsock_conn_count(const struct vsock_dev *d)
{
	unsigned n = 0;
	for (unsigned i = 0; i < VSOCK_MAX_CONNS; i++)
		n += d->conns[i].state != VC_FREE;
	return n;
}

/* ---- guest -> host (tx) ---- */

/* Takes the guest's credit fields. The guest may resize its buffer at will, but fwd_cnt may
 * only move forward, and never past what we actually sent it. */
static int take_credit(struct vsock_conn *c, const struct virtio_vsock_hdr *h)
{
	uint32_t fwd = le32toh(h->fwd_cnt);
	uint32_t outstanding = c->rx_cnt - c->peer_fwd_cnt;
	if ((uint32_t)(fwd - c->peer_fwd_cnt) > outstanding)
		return -1;
	c->peer_fwd_cnt = fwd;
	c->peer_buf_alloc = le32toh(h->buf_alloc);
	return 0;
}

static void violation(struct vsock_dev *d, struct vsock_conn *c, uint64_t *counter)
{
	(*counter)++;
	vsock_conn_reset(d, c);
}

static void guest_request(struct vsock_dev *d, const struct virtio_vsock_hdr *h)
{
	uint32_t gport = le32toh(h->src_port), hport = le32toh(h->dst_port);
	struct vsock_conn *c = vsock_conn_alloc(d);
	int fd = c ? vsock_conn_connect(d, hport) : -EMFILE;
	if (fd < 0) {
		/* Nothing listens on PREFIX_port (or no room): the guest's connect fails now. */
		d->st.refused++;
		vsock_conn_queue_rst(d, gport, hport);
		return;
	}
	c->fd = fd;
	c->state = VC_ESTABLISHED;
	c->guest_port = gport;
	c->host_port = hport;
	c->peer_buf_alloc = le32toh(h->buf_alloc);
	/* Our byte count starts where the guest's does, so "fwd_cnt never passes what we sent"
	 * holds from the first packet on, whatever the guest starts at. */
	c->peer_fwd_cnt = le32toh(h->fwd_cnt);
	c->rx_cnt = c->peer_fwd_cnt;
	c->pending = VC_P_RESPONSE;
	c->readable = true;
	if (vsock_conn_watch(d, c) < 0) {
		d->st.refused++;
		vsock_conn_reset(d, c);
		return;
	}
	d->st.connections++;
}

static void guest_rw(struct vsock_dev *d, struct vsock_conn *c, const struct vq_chain *ch,
		     uint32_t len)
{
	if (c->state != VC_ESTABLISHED || (c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_SEND))
		return violation(d, c, &d->st.bad_state);
	/* Credit: what the guest has sent and we have not forwarded must fit our buffer. */
	uint32_t held = c->tx_cnt - c->fwd_cnt;
	if (len > VSOCK_BUF_ALLOC - held)
		return violation(d, c, &d->st.bad_credit);
	if (len == 0)
		return;
	struct iovec iov[VQ_MAX_IOV];
	unsigned n = vq_chain_iov(ch, false, VSOCK_HDR_LEN, len, iov, VQ_MAX_IOV);
	c->tx_cnt += len;
	if (vsock_conn_write(d, c, iov, n, len) < 0)
		return vsock_conn_reset(d, c);
	vsock_conn_settle(d, c);
}

static void guest_shutdown(struct vsock_dev *d, struct vsock_conn *c, uint32_t flags)
{
	if (c->state != VC_ESTABLISHED ||
	    (flags & ~(uint32_t)(VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND)))
		return violation(d, c, &d->st.bad_state);
	c->peer_shutdown |= flags;
	vsock_conn_settle(d, c);
}

static void guest_response(struct vsock_dev *d, struct vsock_conn *c)
{
	if (c->state != VC_REQUESTED || (c->pending & VC_P_REQUEST))
		return violation(d, c, &d->st.bad_state);
	char ok[24];
	int n = snprintf(ok, sizeof(ok), "OK %u\n", c->host_port);
	/* A fresh socket's buffer always takes a few bytes; anything else means the host left. */
	if (send(c->fd, ok, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
		return vsock_conn_reset(d, c);
	c->state = VC_ESTABLISHED;
	d->st.connections++;
}

/* One packet from the tx queue. */
static void tx_packet(struct vsock_dev *d, const struct vq_chain *ch)
{
	if (ch->nwrite || ch->read_len < VSOCK_HDR_LEN) {
		d->st.bad_chain++;
		return;
	}
	struct virtio_vsock_hdr h;
	vq_chain_read(ch, 0, &h, sizeof(h));
	uint32_t gport = le32toh(h.src_port), hport = le32toh(h.dst_port);
	uint32_t len = le32toh(h.len);
	uint16_t op = le16toh(h.op);
	if (le64toh(h.src_cid) != d->guest_cid || le64toh(h.dst_cid) != VSOCK_HOST_CID) {
		/* Spoofed or misdirected: no connection of ours is named, so nothing to reset. */
		d->st.bad_addr++;
		return;
	}
	struct vsock_conn *c = vsock_conn_find(d, gport, hport);
	if (op == VIRTIO_VSOCK_OP_RST) {
		if (c)
			vsock_conn_free(d, c); /* the guest gave up: no answer */
		return;
	}
	uint64_t *bad = NULL;
	if (le16toh(h.type) != VIRTIO_VSOCK_TYPE_STREAM)
		bad = &d->st.bad_type;
	else if (len > ch->read_len - VSOCK_HDR_LEN || len > VSOCK_MAX_PKT ||
		 (len && op != VIRTIO_VSOCK_OP_RW))
		bad = &d->st.bad_len;
	else if (op < VIRTIO_VSOCK_OP_REQUEST || op > VIRTIO_VSOCK_OP_CREDIT_REQUEST)
		bad = &d->st.bad_op;
	if (bad) {
		(*bad)++;
		if (c)
			vsock_conn_reset(d, c);
		else
			vsock_conn_queue_rst(d, gport, hport);
		return;
	}
	if (op == VIRTIO_VSOCK_OP_REQUEST) {
		if (c)
			return violation(d, c, &d->st.bad_state);
		return guest_request(d, &h);
	}
	if (!c) {
		d->st.unknown_conn++;
		vsock_conn_queue_rst(d, gport, hport);
		return;
	}
	if (take_credit(c, &h) < 0)
		return violation(d, c, &d->st.bad_credit);
	switch (op) {
	case VIRTIO_VSOCK_OP_RESPONSE:
		return guest_response(d, c);
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		return guest_shutdown(d, c, le32toh(h.flags));
	case VIRTIO_VSOCK_OP_RW:
		return guest_rw(d, c, ch, len);
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		return; /* take_credit() did it; the rx pump may now send more */
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		c->pending |= VC_P_CREDIT;
		return;
	}
}

static void process_tx(struct vsock_dev *d)
{
	struct vq *vq = &d->q[VSOCK_Q_TX];
	struct vq_chain ch;
	int r;
	/* Malformed chains (r < 0) were already returned and counted by vq_pop(). */
	while ((r = vq_pop(vq, &d->mem, &ch)) != 0) {
		if (r < 0) {
			d->st.bad_chain++;
			if (vq->broken)
				break;
			continue;
		}
		tx_packet(d, &ch);
		vq_push(vq, ch.head, 0);
	}
}

/* ---- host -> guest (rx) ---- */

static void fill_hdr(const struct vsock_dev *d, struct virtio_vsock_hdr *h, uint32_t gport,
		     uint32_t hport, uint16_t op)
{
	memset(h, 0, sizeof(*h));
	h->src_cid = htole64(VSOCK_HOST_CID);
	h->dst_cid = htole64(d->guest_cid);
	h->src_port = htole32(hport);
	h->dst_port = htole32(gport);
	h->type = htole16(VIRTIO_VSOCK_TYPE_STREAM);
	h->op = htole16(op);
}

/* Credit fields ride on every packet of a connection. */
static void fill_credit(struct vsock_conn *c, struct virtio_vsock_hdr *h)
{
	h->buf_alloc = htole32(VSOCK_BUF_ALLOC);
	h->fwd_cnt = htole32(c->fwd_cnt);
	c->fwd_cnt_sent = c->fwd_cnt;
}

static uint32_t peer_free(const struct vsock_conn *c)
{
	uint32_t used = c->rx_cnt - c->peer_fwd_cnt;
	return used >= c->peer_buf_alloc ? 0 : c->peer_buf_alloc - used;
}

static bool wants_data(const struct vsock_conn *c)
{
	return c->state == VC_ESTABLISHED && c->readable && !c->host_eof &&
	       !(c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_RCV) && peer_free(c) > 0;
}

/* Next control packet c owes, highest priority first; 0 when none. */
static uint16_t next_ctrl(struct vsock_conn *c, uint32_t *flags)
{
	if (c->pending & VC_P_REQUEST) {
		c->pending &= ~VC_P_REQUEST;
		return VIRTIO_VSOCK_OP_REQUEST;
	}
	if (c->pending & VC_P_RESPONSE) {
		c->pending &= ~VC_P_RESPONSE;
		return VIRTIO_VSOCK_OP_RESPONSE;
	}
	if (c->pending & VC_P_CREDIT) {
		c->pending &= ~VC_P_CREDIT;
		return VIRTIO_VSOCK_OP_CREDIT_UPDATE;
	}
	if (c->pending & VC_P_SHUTDOWN) {
		c->pending &= ~VC_P_SHUTDOWN;
		*flags = c->shutdown_flags;
		return VIRTIO_VSOCK_OP_SHUTDOWN;
	}
	return 0;
}

/* Reads host data straight into the guest's buffer. Returns bytes (0: nothing now). */
static uint32_t read_data(struct vsock_dev *d, struct vsock_conn *c, const struct vq_chain *ch)
{
	uint64_t room = ch->write_len - VSOCK_HDR_LEN;
	uint32_t max = peer_free(c);
	if (max > VSOCK_MAX_PKT)
		max = VSOCK_MAX_PKT;
	if (room < max)
		max = (uint32_t)room;
	if (max == 0)
		return 0;
	struct iovec iov[VQ_MAX_IOV];
	unsigned n = vq_chain_iov(ch, true, VSOCK_HDR_LEN, max, iov, VQ_MAX_IOV);
	ssize_t r;
	do
		r = readv(c->fd, iov, (int)n);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		return (uint32_t)r;
	c->readable = false;
	if (r == 0) {
		/* Host closed its sending side: the guest reads EOF after the data it has. */
		c->host_eof = true;
		c->shutdown_flags = VIRTIO_VSOCK_SHUTDOWN_SEND;
		c->pending |= VC_P_SHUTDOWN;
	} else if (errno != EAGAIN) {
		vsock_conn_reset(d, c);
	}
	return 0;
}

/* Puts one packet into rx. Returns 1 when it used the buffer, -1 when it did not but changed
 * some state (look again), 0 when there is nothing to send. */
static int rx_one(struct vsock_dev *d, struct vq *vq, const struct vq_chain *ch)
{
	struct virtio_vsock_hdr h;
	if (d->rst_count) {
		fill_hdr(d, &h, d->rst[d->rst_head].guest_port, d->rst[d->rst_head].host_port,
			 VIRTIO_VSOCK_OP_RST);
		d->rst_head = (d->rst_head + 1) % VSOCK_RST_RING;
		d->rst_count--;
		vq_chain_write(ch, 0, &h, sizeof(h));
		vq_push(vq, ch->head, VSOCK_HDR_LEN);
		return 1;
	}
	for (unsigned k = 0; k < VSOCK_MAX_CONNS; k++) {
		unsigned i = (d->rr + k) % VSOCK_MAX_CONNS;
		struct vsock_conn *c = &d->conns[i];
		if (c->state == VC_FREE || c->state == VC_HANDSHAKE)
			continue;
		uint32_t flags = 0;
		uint16_t op = next_ctrl(c, &flags);
		uint32_t len = 0;
		if (!op && wants_data(c)) {
			len = read_data(d, c, ch);
			if (c->state == VC_FREE || (!len && !c->pending))
				return -1; /* reset, or nothing after all: look again */
			if (!len)
				op = next_ctrl(c, &flags);
			else
				op = VIRTIO_VSOCK_OP_RW;
		}
		if (!op)
			continue;
		fill_hdr(d, &h, c->guest_port, c->host_port, op);
		fill_credit(c, &h);
		h.flags = htole32(flags);
		h.len = htole32(len);
		vq_chain_write(ch, 0, &h, sizeof(h));
		vq_push(vq, ch->head, VSOCK_HDR_LEN + len);
		c->rx_cnt += len;
		/* Next time start after this one: one busy connection cannot starve the rest. */
		d->rr = (i + 1) % VSOCK_MAX_CONNS;
		return 1;
	}
	return 0;
}

static void process_rx(struct vsock_dev *d)
{
	struct vq *vq = &d->q[VSOCK_Q_RX];
	struct vq_chain ch;
	for (;;) {
		int r = vq_pop(vq, &d->mem, &ch);
		if (r == 0)
			return;
		if (r < 0) {
			d->st.bad_chain++;
			if (vq->broken)
				return;
			continue;
		}
		if (ch.nread || ch.write_len < VSOCK_HDR_LEN) {
			/* An rx buffer we cannot even put a header into. */
			d->st.bad_chain++;
			vq_push(vq, ch.head, 0);
			continue;
		}
		int r1 = rx_one(d, vq, &ch);
		if (r1 == 1)
			continue;
		vq_unpop(vq); /* the chain is still the guest's, to be used next time */
		if (r1 == 0)
			return;
	}
}

void vsock_kick(struct vsock_dev *d)
{
	process_tx(d);
	process_rx(d);
	vq_notify(&d->q[VSOCK_Q_TX]);
	vq_notify(&d->q[VSOCK_Q_RX]);
}

/* ---- host side events ---- */

void vsock_host_accept(struct vsock_dev *d, int fd)
{
	struct vsock_conn *c = vsock_conn_alloc(d);
	if (!c) {
		close(fd); /* the host program sees the connection closed: no room */
		return;
	}
	c->fd = fd;
	c->state = VC_HANDSHAKE;
	if (vsock_conn_watch(d, c) < 0)
		vsock_conn_free(d, c);
}

static void handshake(struct vsock_dev *d, struct vsock_conn *c)
{
	uint32_t port;
	int r = vsock_conn_read_connect(c, &port);
	if (r == 0)
		return;
	if (r < 0) {
		d->st.bad_handshake++;
		return vsock_conn_free(d, c);
	}
	/* A fresh host port, unique among live connections to that guest port. */
	uint32_t hport;
	do {
		hport = d->next_host_port++;
		if (d->next_host_port == 0)
			d->next_host_port = HOST_PORT_BASE;
	} while (vsock_conn_find(d, port, hport));
	c->guest_port = port;
	c->host_port = hport;
	c->state = VC_REQUESTED;
	c->pending = VC_P_REQUEST;
	/* Until the guest tells us its buffer, we may send nothing (peer_buf_alloc 0). */
	c->readable = true;
}

void vsock_host_event(struct vsock_dev *d, unsigned idx, uint32_t events)
{
	if (idx >= VSOCK_MAX_CONNS)
		return;
	struct vsock_conn *c = &d->conns[idx];
	if (c->state == VC_FREE)
		return;
	if (c->state == VC_HANDSHAKE) {
		if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			handshake(d, c);
	} else {
		if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			c->readable = true;
		if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && c->buf_len) {
			if (vsock_conn_flush(d, c) < 0)
				vsock_conn_reset(d, c);
			else
				vsock_conn_settle(d, c);
		}
	}
	process_rx(d);
	vq_notify(&d->q[VSOCK_Q_RX]);
}
