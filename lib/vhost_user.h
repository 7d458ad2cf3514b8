/* SPDX-License-Identifier: Apache-2.0 */
/* lib/vhost_user.h: the vhost-user protocol (wire version 1), as spoken between bulkhead-vmm's
 * front end and its device back ends (bulkhead-vsock, virtiofsd) over a Unix stream socket.
 *
 * Reference: QEMU docs/interop/vhost-user.rst. Only the subset bulkhead uses is known here;
 * anything else is an error, never ignored, because the peer is a separately jailed process
 * that may be compromised.
 *
 * Wire format, one message:
 *   struct vhost_user_hdr   12 bytes, host byte order: request, flags, size
 *   payload                 `size` bytes (0 <= size <= VHOST_USER_MAX_PAYLOAD), whose length
 *                           must match what `request` carries (see vhost_user_recv())
 *   file descriptors        SCM_RIGHTS ancillary data on the header's first byte
 * flags: bits 0-1 the version (1), bit 2 REPLY (set on back end -> front end replies), bit 3
 * NEED_REPLY (front end asks for a u64 ack; needs VHOST_USER_PROTOCOL_F_REPLY_ACK). Other bits
 * are reserved and must be zero.
 */
#ifndef BULKHEAD_LIB_VHOST_USER_H
#define BULKHEAD_LIB_VHOST_USER_H

#include <linux/vhost_types.h> /* struct vhost_vring_state, struct vhost_vring_addr */
#include <stdbool.h>
#include <stdint.h>

#define VHOST_USER_VERSION	   0x1u
#define VHOST_USER_VERSION_MASK	   0x3u
#define VHOST_USER_FLAG_REPLY	   (1u << 2)
#define VHOST_USER_FLAG_NEED_REPLY (1u << 3)
#define VHOST_USER_FLAGS_KNOWN                                                                     \
	(VHOST_USER_VERSION_MASK | VHOST_USER_FLAG_REPLY | VHOST_USER_FLAG_NEED_REPLY)

/* Requests (front end -> back end), numbered as in the spec. The gaps are requests bulkhead
 * neither sends nor serves (logging, postcopy, crypto, inflight...): they are refused. */
enum vhost_user_request {
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
	VHOST_USER_GET_CONFIG = 24,
	VHOST_USER_SET_CONFIG = 25,
	VHOST_USER_RESET_DEVICE = 34,
	VHOST_USER_GET_MAX_MEM_SLOTS = 36,
	VHOST_USER_SET_STATUS = 39,
	VHOST_USER_GET_STATUS = 40,
};

/* Virtio feature bit (in GET/SET_FEATURES) saying the back end speaks protocol features. Once
 * negotiated, rings start disabled until SET_VRING_ENABLE. */
#define VHOST_USER_F_PROTOCOL_FEATURES 30

/* Protocol-feature bit numbers (GET/SET_PROTOCOL_FEATURES). */
enum vhost_user_protocol_feature {
	VHOST_USER_PROTOCOL_F_MQ = 0,
	VHOST_USER_PROTOCOL_F_LOG_SHMFD = 1,
	VHOST_USER_PROTOCOL_F_RARP = 2,
	VHOST_USER_PROTOCOL_F_REPLY_ACK = 3,
	VHOST_USER_PROTOCOL_F_NET_MTU = 4,
	VHOST_USER_PROTOCOL_F_BACKEND_REQ = 5,
	VHOST_USER_PROTOCOL_F_CROSS_ENDIAN = 6,
	VHOST_USER_PROTOCOL_F_CRYPTO_SESSION = 7,
	VHOST_USER_PROTOCOL_F_PAGEFAULT = 8,
	VHOST_USER_PROTOCOL_F_CONFIG = 9,
	VHOST_USER_PROTOCOL_F_BACKEND_SEND_FD = 10,
	VHOST_USER_PROTOCOL_F_HOST_NOTIFIER = 11,
	VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD = 12,
	VHOST_USER_PROTOCOL_F_RESET_DEVICE = 13,
	VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS = 14,
	VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS = 15,
	VHOST_USER_PROTOCOL_F_STATUS = 16,
};

#define VHOST_USER_MAX_REGIONS 8   /* memory-table entries (the spec's baseline) */
#define VHOST_USER_MAX_CONFIG  256 /* config-space bytes in GET/SET_CONFIG */
#define VHOST_USER_MAX_FDS     8   /* fds one message may carry (SET_MEM_TABLE: one per region) */
#define VHOST_USER_MAX_QUEUES  256 /* ring index fits the u64 payload's low 8 bits */

/* SET_VRING_KICK/CALL/ERR payload (u64): ring index in the low byte; NOFD set means no fd
 * follows (polling mode, which bulkhead never uses). Other bits must be zero. */
#define VHOST_USER_VRING_IDX_MASK 0xffull
#define VHOST_USER_VRING_NOFD	  (1ull << 8)

struct vhost_user_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* payload bytes that follow */
} __attribute__((packed));

/* SET_MEM_TABLE entry. userspace_addr is the FRONT END's name for guest_phys_addr (bulkhead-vmm
 * uses a fixed base plus the memfd offset, not its pointers: vmm/virtio/vu_front.c): ring
 * addresses in SET_VRING_ADDR are front-end user addresses, translated through this table. */
struct vhost_user_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t mmap_offset; /* into the fd that accompanies this region */
};

/* SET_MEM_TABLE payload: 8 + nregions * 32 bytes on the wire, nregions fds. */
struct vhost_user_mem_table {
	uint32_t nregions; /* 1..VHOST_USER_MAX_REGIONS */
	uint32_t padding;
	struct vhost_user_mem_region regions[VHOST_USER_MAX_REGIONS];
};

/* GET/SET_CONFIG payload: 12 + size bytes on the wire, for the request and its reply. */
#define VHOST_USER_CONFIG_HDR_SIZE 12u
struct vhost_user_config {
	uint32_t offset; /* into the device's config space */
	uint32_t size;	 /* 1..VHOST_USER_MAX_CONFIG */
	uint32_t flags;	 /* 0 (or 1: live migration, unused here) */
	uint8_t region[VHOST_USER_MAX_CONFIG];
};

union vhost_user_payload {
	uint64_t u64; /* features, ack status, queue count, kick/call/err index */
	struct vhost_vring_state state;
	struct vhost_vring_addr addr;
	struct vhost_user_mem_table mem;
	struct vhost_user_config config;
};

#define VHOST_USER_MAX_PAYLOAD ((uint32_t)sizeof(union vhost_user_payload))

/* One decoded message. fds[0..nfds) are owned by whoever holds the message: close them with
 * vhost_user_msg_close_fds() unless taken (then set the slot to -1). */
struct vhost_user_msg {
	struct vhost_user_hdr hdr;
	union vhost_user_payload p;
	int fds[VHOST_USER_MAX_FDS];
	unsigned nfds;
};

/* Which way a message travels, for the size and flag checks. */
enum vhost_user_dir {
	VHOST_USER_TO_BACKEND,	/* a request: REPLY clear */
	VHOST_USER_TO_FRONTEND, /* a reply: REPLY set, NEED_REPLY clear */
};

/* The request's name ("SET_MEM_TABLE"), or NULL when bulkhead does not know it. */
const char *vhost_user_request_name(uint32_t request);

/* Whether the back end answers `request` with a reply of its own even without NEED_REPLY
 * (the GET_* requests). */
bool vhost_user_has_reply(uint32_t request);

/*
 * Checks a decoded message: version and flags; request known; size exactly what the request
 * carries in that direction (u64 = 8, vring state = 8, vring addr = 40, mem table = 8 + n*32
 * with 1 <= n <= 8, config = 12 + size with offset + size within VHOST_USER_MAX_CONFIG, and
 * 0 for the bare requests); fds exactly what it carries (mem table: n; kick/call/err: 1
 * unless NOFD; others: none) — surplus fds are closed and dropped, missing ones are an error.
 * A reply to a NEED_REPLY request is a u64; the caller matches it (need_ack).
 * Returns 0, -EOPNOTSUPP (unknown request), -EBADMSG (anything else wrong).
 */
int vhost_user_check(struct vhost_user_msg *m, enum vhost_user_dir dir, bool need_ack);

/* Prepares a message: version 1, `flags` (REPLY/NEED_REPLY), payload size, no fds. */
void vhost_user_msg_init(struct vhost_user_msg *m, uint32_t request, uint32_t flags, uint32_t size);

/*
 * How long a send or receive may wait, for a caller that must not outlive something else (the
 * VMM's vCPU threads must give way when the VM stops). One deadline for the whole message:
 * interruptions by signals restart nothing. NULL instead: block as the socket does (its own
 * SO_RCVTIMEO/SO_SNDTIMEO, if any, then come back as -ETIMEDOUT).
 */
struct vhost_user_wait {
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; -ETIMEDOUT once passed (0: none) */
	int stop_fd;	      /* readable: give up now with -ECANCELED (-1: none) */
};

/* A wait ending timeout_ms from now (0: no deadline) or when stop_fd becomes readable. */
struct vhost_user_wait vhost_user_wait_for(unsigned timeout_ms, int stop_fd);

/* Sends header + hdr.size payload bytes + fds[0..nfds) (SCM_RIGHTS), retrying short writes,
 * within w (may be NULL, see above). Refuses (-EMSGSIZE) a size above VHOST_USER_MAX_PAYLOAD
 * or more than VHOST_USER_MAX_FDS fds. Does not close the fds. Returns 0 or -errno (-EPIPE:
 * peer gone; never raises SIGPIPE; -ETIMEDOUT, -ECANCELED: w ran out). */
int vhost_user_send(int sock, const struct vhost_user_msg *m, const struct vhost_user_wait *w);

/*
 * Receives one message within w (may be NULL) and runs vhost_user_check() on it (need_ack as
 * there). On any error every fd received is closed and m->nfds is 0. Returns 0, -ECONNRESET
 * (peer closed, also mid-message), -EBADMSG (bad header, oversized or truncated payload,
 * truncated fd list), -EOPNOTSUPP, -ETIMEDOUT, -ECANCELED, or -errno.
 */
int vhost_user_recv(int sock, struct vhost_user_msg *m, enum vhost_user_dir dir, bool need_ack,
		    const struct vhost_user_wait *w);

/* Closes fds[0..nfds) that are still >= 0 and sets nfds to 0. */
void vhost_user_msg_close_fds(struct vhost_user_msg *m);

/* Back-end side: replies to `req` with `size` bytes of `payload` (REPLY set, same request);
 * blocks as the socket does. */
int vhost_user_reply(int sock, const struct vhost_user_msg *req, const void *payload,
		     uint32_t size);
/* Back-end side: when req asked for NEED_REPLY, sends the u64 ack (0 = success, else an
 * error); otherwise does nothing. Returns 0 or -errno. */
int vhost_user_reply_ack(int sock, const struct vhost_user_msg *req, uint64_t status);

#endif
