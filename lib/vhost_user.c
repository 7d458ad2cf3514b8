/* SPDX-License-Identifier: Apache-2.0 */
/* lib/vhost_user.c: vhost-user message framing — size-checked encoding and decoding, and fd
 * passing with SCM_RIGHTS; the peer is untrusted, so every length is checked before use. */
#include "lib/vhost_user.h"

#include "lib/mono.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct vhost_user_hdr) == 12, "vhost-user header is 12 bytes");
_Static_assert(sizeof(struct vhost_vring_state) == 8, "vring state is 8 bytes");
_Static_assert(sizeof(struct vhost_vring_addr) == 40, "vring addr is 40 bytes");
_Static_assert(sizeof(struct vhost_user_mem_region) == 32, "memory region is 32 bytes");
_Static_assert(offsetof(struct vhost_user_mem_table, regions) == 8, "mem table header");
_Static_assert(offsetof(struct vhost_user_config, region) == VHOST_USER_CONFIG_HDR_SIZE,
	       "config header");

/* What a payload is, for the size check. */
enum vu_kind {
	VU_NONE = 0, /* no payload (or, as a reply kind: no reply of its own) */
	VU_U64,
	VU_STATE,
	VU_ADDR,
	VU_MEM,
	VU_FILE, /* u64 ring index + NOFD bit, and an fd unless NOFD */
	VU_CONFIG,
	VU_EMPTY, /* a request with no payload */
};

struct vu_req_info {
	const char *name;
	unsigned char req;   /* payload kind front end -> back end */
	unsigned char reply; /* payload kind of its own reply, VU_NONE when it has none */
};

static const struct vu_req_info vu_reqs[] = {
	[VHOST_USER_GET_FEATURES] = { "GET_FEATURES", VU_EMPTY, VU_U64 },
	[VHOST_USER_SET_FEATURES] = { "SET_FEATURES", VU_U64, VU_NONE },
	[VHOST_USER_SET_OWNER] = { "SET_OWNER", VU_EMPTY, VU_NONE },
	[VHOST_USER_RESET_OWNER] = { "RESET_OWNER", VU_EMPTY, VU_NONE },
	[VHOST_USER_SET_MEM_TABLE] = { "SET_MEM_TABLE", VU_MEM, VU_NONE },
	[VHOST_USER_SET_VRING_NUM] = { "SET_VRING_NUM", VU_STATE, VU_NONE },
	[VHOST_USER_SET_VRING_ADDR] = { "SET_VRING_ADDR", VU_ADDR, VU_NONE },
	[VHOST_USER_SET_VRING_BASE] = { "SET_VRING_BASE", VU_STATE, VU_NONE },
	[VHOST_USER_GET_VRING_BASE] = { "GET_VRING_BASE", VU_STATE, VU_STATE },
	[VHOST_USER_SET_VRING_KICK] = { "SET_VRING_KICK", VU_FILE, VU_NONE },
	[VHOST_USER_SET_VRING_CALL] = { "SET_VRING_CALL", VU_FILE, VU_NONE },
	[VHOST_USER_SET_VRING_ERR] = { "SET_VRING_ERR", VU_FILE, VU_NONE },
	[VHOST_USER_GET_PROTOCOL_FEATURES] = { "GET_PROTOCOL_FEATURES", VU_EMPTY, VU_U64 },
	[VHOST_USER_SET_PROTOCOL_FEATURES] = { "SET_PROTOCOL_FEATURES", VU_U64, VU_NONE },
	[VHOST_USER_GET_QUEUE_NUM] = { "GET_QUEUE_NUM", VU_EMPTY, VU_U64 },
	[VHOST_USER_SET_VRING_ENABLE] = { "SET_VRING_ENABLE", VU_STATE, VU_NONE },
	[VHOST_USER_GET_CONFIG] = { "GET_CONFIG", VU_CONFIG, VU_CONFIG },
	[VHOST_USER_SET_CONFIG] = { "SET_CONFIG", VU_CONFIG, VU_NONE },
	[VHOST_USER_RESET_DEVICE] = { "RESET_DEVICE", VU_EMPTY, VU_NONE },
	[VHOST_USER_GET_MAX_MEM_SLOTS] = { "GET_MAX_MEM_SLOTS", VU_EMPTY, VU_U64 },
	[VHOST_USER_SET_STATUS] = { "SET_STATUS", VU_U64, VU_NONE },
	[VHOST_USER_GET_STATUS] = { "GET_STATUS", VU_EMPTY, VU_U64 },
};

static const struct vu_req_info *vu_info(uint32_t request)
{
	if (request >= sizeof(vu_reqs) / sizeof(vu_reqs[0]) || !vu_reqs[request].name)
		return NULL;
	return &vu_reqs[request];
}

const char *vhost_user_request_name(uint32_t request)
{
	const struct vu_req_info *i = vu_info(request);
	return i ? i->name : NULL;
}

bool vhost_user_has_reply(uint32_t request)
{
	const struct vu_req_info *i = vu_info(request);
	return i && i->reply != VU_NONE;
}

void vhost_user_msg_close_fds(struct vhost_user_msg *m)
{
	for (unsigned i = 0; i < m->nfds && i < VHOST_USER_MAX_FDS; i++) {
		if (m->fds[i] >= 0)
			close(m->fds[i]);
		m->fds[i] = -1;
	}
	m->nfds = 0;
}

/* Keeps the first `want` fds, closes the rest. Fewer than wanted is the caller's error. */
static int vu_keep_fds(struct vhost_user_msg *m, unsigned want)
{
	if (m->nfds < want)
		return -EBADMSG;
	for (unsigned i = want; i < m->nfds; i++) {
		close(m->fds[i]);
		m->fds[i] = -1;
	}
	m->nfds = want;
	return 0;
}

static int vu_check_mem(struct vhost_user_msg *m)
{
	const struct vhost_user_mem_table *t = &m->p.mem;
	uint32_t size = m->hdr.size;

	if (size < offsetof(struct vhost_user_mem_table, regions))
		return -EBADMSG;
	if (t->nregions < 1 || t->nregions > VHOST_USER_MAX_REGIONS ||
	    size != offsetof(struct vhost_user_mem_table, regions) +
			    t->nregions * sizeof(struct vhost_user_mem_region))
		return -EBADMSG;
	for (uint32_t i = 0; i < t->nregions; i++) {
		const struct vhost_user_mem_region *r = &t->regions[i];
		/* An empty or wrapping region can only be a lie; refuse it here, once. */
		if (r->memory_size == 0 ||
		    r->guest_phys_addr + r->memory_size < r->guest_phys_addr ||
		    r->userspace_addr + r->memory_size < r->userspace_addr ||
		    r->mmap_offset + r->memory_size < r->mmap_offset)
			return -EBADMSG;
	}
	return vu_keep_fds(m, t->nregions);
}

static int vu_check_payload(struct vhost_user_msg *m, enum vu_kind kind)
{
	uint32_t size = m->hdr.size;

	switch (kind) {
	case VU_EMPTY:
		return size == 0 ? vu_keep_fds(m, 0) : -EBADMSG;
	case VU_U64:
		return size == sizeof(uint64_t) ? vu_keep_fds(m, 0) : -EBADMSG;
	case VU_STATE:
		return size == sizeof(struct vhost_vring_state) ? vu_keep_fds(m, 0) : -EBADMSG;
	case VU_ADDR:
		return size == sizeof(struct vhost_vring_addr) ? vu_keep_fds(m, 0) : -EBADMSG;
	case VU_MEM:
		return vu_check_mem(m);
	case VU_FILE:
		if (size != sizeof(uint64_t) ||
		    (m->p.u64 & ~(VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD)))
			return -EBADMSG;
		return vu_keep_fds(m, (m->p.u64 & VHOST_USER_VRING_NOFD) ? 0 : 1);
	case VU_CONFIG:
		if (size < VHOST_USER_CONFIG_HDR_SIZE ||
		    size - VHOST_USER_CONFIG_HDR_SIZE != m->p.config.size ||
		    m->p.config.size == 0 || m->p.config.size > VHOST_USER_MAX_CONFIG ||
		    m->p.config.offset > VHOST_USER_MAX_CONFIG - m->p.config.size)
			return -EBADMSG;
		return vu_keep_fds(m, 0);
	case VU_NONE:
		break;
	}
	return -EBADMSG;
}

int vhost_user_check(struct vhost_user_msg *m, enum vhost_user_dir dir, bool need_ack)
{
	const struct vu_req_info *i = vu_info(m->hdr.request);
	uint32_t f = m->hdr.flags;
	enum vu_kind kind;

	if ((f & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION || (f & ~VHOST_USER_FLAGS_KNOWN))
		return -EBADMSG;
	if (!i)
		return -EOPNOTSUPP;
	if (dir == VHOST_USER_TO_BACKEND) {
		if (f & VHOST_USER_FLAG_REPLY)
			return -EBADMSG;
		kind = i->req;
	} else {
		if (!(f & VHOST_USER_FLAG_REPLY) || (f & VHOST_USER_FLAG_NEED_REPLY))
			return -EBADMSG;
		/* A GET_* answers with its own payload; anything else answers only an ack. */
		kind = i->reply != VU_NONE ? i->reply : need_ack ? VU_U64 : VU_NONE;
	}
	return vu_check_payload(m, kind);
}

void vhost_user_msg_init(struct vhost_user_msg *m, uint32_t request, uint32_t flags, uint32_t size)
{
	memset(m, 0, sizeof(*m));
	m->hdr.request = request;
	m->hdr.flags = VHOST_USER_VERSION | flags;
	m->hdr.size = size;
	for (unsigned i = 0; i < VHOST_USER_MAX_FDS; i++)
		m->fds[i] = -1;
}

static uint64_t vu_now_ns(void)
{
	return mono_ns();
}

struct vhost_user_wait vhost_user_wait_for(unsigned timeout_ms, int stop_fd)
{
	return (struct vhost_user_wait){
		.deadline_ns = timeout_ms ? vu_now_ns() + timeout_ms * 1000000ull : 0,
		.stop_fd = stop_fd,
	};
}

/* Waits until sock is ready for events within w. 0, -ETIMEDOUT, -ECANCELED or -errno. Without
 * w there is nothing to wait for here: the blocking call that follows does the waiting. */
static int vu_wait(int sock, short events, const struct vhost_user_wait *w)
{
	if (!w)
		return 0;
	for (;;) {
		struct pollfd p[2] = { { .fd = sock, .events = events },
				       { .fd = w->stop_fd, .events = POLLIN } };
		int timeout = -1;
		if (w->deadline_ns) {
			uint64_t now = vu_now_ns();
			uint64_t left_ms = now >= w->deadline_ns
						   ? 0 /* one last look: ready now still counts */
						   : (w->deadline_ns - now + 999999) / 1000000;
			timeout = left_ms > INT_MAX ? INT_MAX : (int)left_ms;
		}
		int n = poll(p, 2, timeout);
		if (n < 0 && errno == EINTR)
			continue; /* the loop recomputes what is left of the one deadline */
		if (n < 0)
			return -errno;
		if (p[1].revents)
			return -ECANCELED;
		if (p[0].revents)
			return 0; /* ready, or hung up / in error: the call itself says which */
		if (timeout == 0)
			return -ETIMEDOUT;
	}
}

int vhost_user_send(int sock, const struct vhost_user_msg *m, const struct vhost_user_wait *w)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov[2] = {
		{ (void *)&m->hdr, sizeof(m->hdr) },
		{ (void *)&m->p, m->hdr.size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t left = sizeof(m->hdr) + m->hdr.size;

	if (m->hdr.size > VHOST_USER_MAX_PAYLOAD || m->nfds > VHOST_USER_MAX_FDS)
		return -EMSGSIZE;
	if (m->nfds) {
		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * m->nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * m->nfds);
		memcpy(CMSG_DATA(c), m->fds, sizeof(int) * m->nfds);
	}
	while (left) {
		int err = vu_wait(sock, POLLOUT, w);
		if (err)
			return err;
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL | (w ? MSG_DONTWAIT : 0));
		if (n < 0) {
			if (errno == EINTR || (w && errno == EAGAIN))
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		/* The fds went with the first byte; a short write continues without them. */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		left -= (size_t)n;
		while (n > 0 && mh.msg_iovlen) {
			size_t take =
				(size_t)n < mh.msg_iov->iov_len ? (size_t)n : mh.msg_iov->iov_len;
			mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + take;
			mh.msg_iov->iov_len -= take;
			n -= (ssize_t)take;
			if (mh.msg_iov->iov_len == 0) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	return 0;
}

/* Reads exactly len bytes within w. 0, -ECONNRESET on EOF, -ETIMEDOUT, -ECANCELED, -errno. */
static int vu_read_full(int sock, void *buf, size_t len, const struct vhost_user_wait *w)
{
	char *p = buf;
	while (len) {
		int err = vu_wait(sock, POLLIN, w);
		if (err)
			return err;
		ssize_t n = recv(sock, p, len, w ? MSG_DONTWAIT : MSG_WAITALL);
		if (n < 0) {
			if (errno == EINTR || (w && errno == EAGAIN))
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Moves the fds of every SCM_RIGHTS block into m; any beyond VHOST_USER_MAX_FDS are closed. */
static void vu_take_fds(struct msghdr *mh, struct vhost_user_msg *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		const unsigned char *data = CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, data + i * sizeof(int), sizeof(int));
			if (m->nfds < VHOST_USER_MAX_FDS)
				m->fds[m->nfds++] = fd;
			else
				close(fd);
		}
	}
}

int vhost_user_recv(int sock, struct vhost_user_msg *m, enum vhost_user_dir dir, bool need_ack,
		    const struct vhost_user_wait *w)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { &m->hdr, sizeof(m->hdr) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	ssize_t n;
	int err;

	vhost_user_msg_init(m, 0, 0, 0);
	m->hdr.flags = 0;
	do {
		err = vu_wait(sock, POLLIN, w);
		if (err)
			return err;
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | (w ? MSG_DONTWAIT : 0));
	} while (n < 0 && (errno == EINTR || (w && errno == EAGAIN)));
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if (n == 0)
		return -ECONNRESET;
	/* fds ride on the header's first byte; more than the buffer holds were never installed
	 * (MSG_CTRUNC), and those beyond what the request carries are closed by the check. */
	vu_take_fds(&mh, m);
	err = vu_read_full(sock, (char *)&m->hdr + n, sizeof(m->hdr) - (size_t)n, w);
	if (err)
		goto fail;
	if (m->hdr.size > VHOST_USER_MAX_PAYLOAD) {
		err = -EBADMSG;
		goto fail;
	}
	err = vu_read_full(sock, &m->p, m->hdr.size, w);
	if (err)
		goto fail;
	err = vhost_user_check(m, dir, need_ack);
	if (err)
		goto fail;
	return 0;

fail:
	vhost_user_msg_close_fds(m);
	return err;
}

int vhost_user_reply(int sock, const struct vhost_user_msg *req, const void *payload, uint32_t size)
{
	struct vhost_user_msg r;

	if (size > VHOST_USER_MAX_PAYLOAD)
		return -EMSGSIZE;
	vhost_user_msg_init(&r, req->hdr.request, VHOST_USER_FLAG_REPLY, size);
	if (size)
		memcpy(&r.p, payload, size);
	return vhost_user_send(sock, &r, NULL);
}

int vhost_user_reply_ack(int sock, const struct vhost_user_msg *req, uint64_t status)
{
	if (!(req->hdr.flags & VHOST_USER_FLAG_NEED_REPLY))
		return 0;
	return vhost_user_reply(sock, req, &status, sizeof(status));
}
