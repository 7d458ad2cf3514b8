/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/vu_front.c: vhost-user requests from the VMM's side. Every request asks for an
 * ack (REPLY_ACK), so a back end that refuses anything is caught at that step; the first
 * failure sticks, so a broken conversation is never half-continued. */
#include "vmm/virtio/vu_front.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Protocol features we can use; CONFIG is not among them (the front end synthesises config
 * space, as QEMU's vhost-user-fs does), nor anything that needs a back-end channel. */
#define VU_FRONT_PROTOCOL_WANTED                                                                   \
	(1ull << VHOST_USER_PROTOCOL_F_MQ | 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK)

/* The "front-end addresses" vhost-user speaks in (SET_MEM_TABLE's userspace_addr, the rings'
 * addresses) are names, not our pointers: VU_FRONT_ADDR_BASE plus the offset in the RAM memfd.
 * They stay the same for a guest restored in another process (where RAM is mapped elsewhere),
 * so a back end that outlives one VMM (a paused session's virtiofsd) finds its stopped rings
 * again in the next memory table; and no pointer of ours is told to a back end. */
#define VU_FRONT_ADDR_BASE (1ull << 44)

static uint64_t front_addr(const struct gmem *gm, const void *p)
{
	return VU_FRONT_ADDR_BASE + (uint64_t)((const uint8_t *)p - gm->host);
}

static int vu_front_fail(struct vu_front *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int vu_front_fail(struct vu_front *f, int err, const char *fmt, ...)
{
	va_list ap;
	if (f->err)
		return f->err;
	f->err = err;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	return err;
}

int vu_front_adopt(struct vu_front *f, int sock, const char *name, unsigned timeout_ms, int stop_fd)
{
	/* No socket timeouts: a signal would restart them (SO_RCVTIMEO starts over on every
	 * retry); each request carries its own deadline instead (vu_front_call). */
	memset(f, 0, sizeof(*f));
	f->sock = sock;
	f->timeout_ms = timeout_ms ? timeout_ms : VU_FRONT_TIMEOUT_MS;
	f->stop_fd = stop_fd;
	snprintf(f->name, sizeof(f->name), "%s", name);
	return 0;
}

int vu_front_connect(struct vu_front *f, const char *path, const char *name, unsigned timeout_ms,
		     int stop_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	memset(f, 0, sizeof(*f));
	f->sock = -1;
	snprintf(f->name, sizeof(f->name), "%s", name);
	if (strlen(path) >= sizeof(sa.sun_path))
		return vu_front_fail(f, -ENAMETOOLONG, "socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return vu_front_fail(f, -errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return vu_front_fail(f, err, "cannot connect to %s: %s", path, strerror(-err));
	}
	return vu_front_adopt(f, fd, name, timeout_ms, stop_fd);
}

void vu_front_close(struct vu_front *f)
{
	if (f->sock >= 0)
		close(f->sock);
	f->sock = -1;
}

/* One request and, for a GET_* or an acked request, its reply (checked: same request, right
 * size, ack 0). reply may be NULL when only an ack is expected. */
static int vu_front_call(struct vu_front *f, struct vhost_user_msg *m, struct vhost_user_msg *reply)
{
	const char *name = vhost_user_request_name(m->hdr.request);
	bool own_reply = vhost_user_has_reply(m->hdr.request);
	bool ack = !own_reply && (f->protocol_features & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK));
	/* One deadline for the request and its reply, and the VM's stop beside it. */
	struct vhost_user_wait w = vhost_user_wait_for(f->timeout_ms, f->stop_fd);
	struct vhost_user_msg tmp;
	int err;

	if (f->err)
		return f->err;
	if (!reply)
		reply = &tmp;
	if (ack)
		m->hdr.flags |= VHOST_USER_FLAG_NEED_REPLY;
	err = vhost_user_send(f->sock, m, &w);
	if (err)
		return vu_front_fail(f, err, "%s: send failed: %s", name,
				     err == -EPIPE	 ? "back end closed its socket"
				     : err == -ETIMEDOUT ? "back end does not read"
				     : err == -ECANCELED ? "the VM is stopping"
							 : strerror(-err));
	if (!own_reply && !ack)
		return 0;
	err = vhost_user_recv(f->sock, reply, VHOST_USER_TO_FRONTEND, ack, &w);
	if (err)
		return vu_front_fail(f, err, "%s: %s", name,
				     err == -ECONNRESET	 ? "back end closed its socket"
				     : err == -ETIMEDOUT ? "no reply in time"
				     : err == -ECANCELED ? "the VM is stopping"
				     : err == -EBADMSG || err == -EOPNOTSUPP ? "malformed reply"
									     : strerror(-err));
	/* Replies carry no fds in anything we ask for; vhost_user_recv already closed any. */
	if (reply->hdr.request != m->hdr.request)
		return vu_front_fail(f, -EPROTO, "%s: reply is for request %u", name,
				     reply->hdr.request);
	if (ack && reply->p.u64 != 0)
		return vu_front_fail(f, -EREMOTEIO, "%s: refused (ack %llu)", name,
				     (unsigned long long)reply->p.u64);
	return 0;
}

static int vu_front_u64(struct vu_front *f, uint32_t req, uint64_t v)
{
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, req, 0, sizeof(uint64_t));
	m.p.u64 = v;
	return vu_front_call(f, &m, NULL);
}

static int vu_front_get_u64(struct vu_front *f, uint32_t req, uint64_t *v)
{
	struct vhost_user_msg m, r;
	vhost_user_msg_init(&m, req, 0, 0);
	int err = vu_front_call(f, &m, &r);
	if (!err)
		*v = r.p.u64;
	return err;
}

static int vu_front_state(struct vu_front *f, uint32_t req, unsigned idx, unsigned num)
{
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, req, 0, sizeof(struct vhost_vring_state));
	m.p.state.index = idx;
	m.p.state.num = num;
	return vu_front_call(f, &m, NULL);
}

static int vu_front_file(struct vu_front *f, uint32_t req, unsigned idx, int fd)
{
	struct vhost_user_msg m;
	vhost_user_msg_init(&m, req, 0, sizeof(uint64_t));
	m.p.u64 = idx & VHOST_USER_VRING_IDX_MASK;
	m.fds[0] = fd;
	m.nfds = 1;
	return vu_front_call(f, &m, NULL);
}

int vu_front_handshake(struct vu_front *f, unsigned queues)
{
	uint64_t pf = 0, n;
	int err;

	err = vu_front_get_u64(f, VHOST_USER_GET_FEATURES, &f->backend_features);
	if (err)
		return err;
	if (!(f->backend_features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)))
		return vu_front_fail(f, -EPROTONOSUPPORT,
				     "back end offers no protocol features (REPLY_ACK needed)");
	err = vu_front_get_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES, &pf);
	if (err)
		return err;
	if (!(pf & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK)))
		return vu_front_fail(f, -EPROTONOSUPPORT, "back end lacks REPLY_ACK");
	/* SET_PROTOCOL_FEATURES itself goes unacked: acks exist only once it is through. */
	err = vu_front_u64(f, VHOST_USER_SET_PROTOCOL_FEATURES, pf & VU_FRONT_PROTOCOL_WANTED);
	if (err)
		return err;
	f->protocol_features = pf & VU_FRONT_PROTOCOL_WANTED;
	{
		struct vhost_user_msg m;
		vhost_user_msg_init(&m, VHOST_USER_SET_OWNER, 0, 0);
		err = vu_front_call(f, &m, NULL);
		if (err)
			return err;
	}
	if (f->protocol_features & (1ull << VHOST_USER_PROTOCOL_F_MQ)) {
		err = vu_front_get_u64(f, VHOST_USER_GET_QUEUE_NUM, &n);
		if (err)
			return err;
		if (n < queues || n > VHOST_USER_MAX_QUEUES)
			return vu_front_fail(f, -EPROTO, "back end serves %llu queues, need %u",
					     (unsigned long long)n, queues);
		f->backend_queues = (uint32_t)n;
	}
	return 0;
}

int vu_front_set_mem_table(struct vu_front *f, const struct gmem *gm)
{
	struct vhost_user_msg m;

	if (gm->nregions == 0 || gm->nregions > VHOST_USER_MAX_REGIONS)
		return vu_front_fail(f, -EINVAL, "SET_MEM_TABLE: %u RAM windows", gm->nregions);
	vhost_user_msg_init(&m, VHOST_USER_SET_MEM_TABLE, 0,
			    (uint32_t)(8 + gm->nregions * sizeof(struct vhost_user_mem_region)));
	m.p.mem.nregions = gm->nregions;
	for (unsigned i = 0; i < gm->nregions; i++) {
		const struct gmem_region *r = &gm->regions[i];
		m.p.mem.regions[i] = (struct vhost_user_mem_region){
			.guest_phys_addr = r->gpa,
			.memory_size = r->size,
			.userspace_addr = VU_FRONT_ADDR_BASE + r->offset,
			.mmap_offset = r->offset,
		};
		m.fds[i] = gm->fd; /* the same memfd once per region, as the spec wants */
	}
	m.nfds = gm->nregions;
	return vu_front_call(f, &m, NULL);
}

int vu_front_set_features(struct vu_front *f, uint64_t driver_features)
{
	return vu_front_u64(f, VHOST_USER_SET_FEATURES,
			    driver_features | 1ull << VHOST_USER_F_PROTOCOL_FEATURES);
}

int vu_front_start_ring(struct vu_front *f, const struct gmem *gm, unsigned idx, unsigned num,
			uint16_t base, uint64_t desc, uint64_t avail, uint64_t used, int kick_fd,
			int call_fd)
{
	struct vhost_user_msg m;
	/* The rings' guest-physical addresses become front-end addresses (front_addr): vhost-user's
	 * ring addresses live in that space, mapped through the memory table. */
	void *d = gmem_ptr(gm, desc, 16ull * num);
	void *a = gmem_ptr(gm, avail, 6 + 2ull * num);
	void *u = gmem_ptr(gm, used, 6 + 8ull * num);
	int err;

	if (!d || !a || !u || idx >= VHOST_USER_MAX_QUEUES)
		return vu_front_fail(f, -EFAULT, "ring %u lies outside guest RAM", idx);
	err = vu_front_state(f, VHOST_USER_SET_VRING_NUM, idx, num);
	if (!err)
		err = vu_front_state(f, VHOST_USER_SET_VRING_BASE, idx, base);
	if (err)
		return err;
	vhost_user_msg_init(&m, VHOST_USER_SET_VRING_ADDR, 0, sizeof(struct vhost_vring_addr));
	m.p.addr = (struct vhost_vring_addr){
		.index = idx,
		.desc_user_addr = front_addr(gm, d),
		.used_user_addr = front_addr(gm, u),
		.avail_user_addr = front_addr(gm, a),
	};
	err = vu_front_call(f, &m, NULL);
	if (!err)
		err = vu_front_file(f, VHOST_USER_SET_VRING_KICK, idx, kick_fd);
	if (!err)
		err = vu_front_file(f, VHOST_USER_SET_VRING_CALL, idx, call_fd);
	if (!err)
		err = vu_front_state(f, VHOST_USER_SET_VRING_ENABLE, idx, 1);
	return err;
}

int vu_front_stop_ring(struct vu_front *f, unsigned idx, uint32_t *base)
{
	struct vhost_user_msg m, r;
	vhost_user_msg_init(&m, VHOST_USER_GET_VRING_BASE, 0, sizeof(struct vhost_vring_state));
	m.p.state.index = idx;
	int err = vu_front_call(f, &m, &r);
	if (err)
		return err;
	if (r.p.state.index != idx)
		return vu_front_fail(f, -EPROTO, "GET_VRING_BASE: reply for ring %u, asked %u",
				     r.p.state.index, idx);
	if (base)
		*base = r.p.state.num;
	return 0;
}
