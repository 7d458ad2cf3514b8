/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/vu_front.h: the vhost-user front end — bulkhead-vmm's side of the conversation
 * with one device back end (lib/vhost_user.h is the wire format). */
#ifndef BULKHEAD_VMM_VIRTIO_VU_FRONT_H
#define BULKHEAD_VMM_VIRTIO_VU_FRONT_H

#include "lib/vhost_user.h"
#include "vmm/gmem.h"

#include <stdint.h>

#define VU_FRONT_TIMEOUT_MS 5000 /* a back end that answers slower than this is dead */

struct vu_front {
	int sock;
	char name[48];		    /* for messages: "virtiofsd", "bulkhead-vsock" */
	unsigned timeout_ms;	    /* per request, its reply included */
	int stop_fd;		    /* readable: the VM is stopping, every wait gives up (-1) */
	uint64_t backend_features;  /* GET_FEATURES */
	uint64_t protocol_features; /* negotiated (what we asked & it offered) */
	uint32_t backend_queues;    /* GET_QUEUE_NUM when MQ, else 0 (unknown) */
	int err;		    /* first failure (negative errno); every call then fails */
	char why[128];		    /* that failure in words: "SET_MEM_TABLE: refused (ack 1)" */
};

/* Connects to a listening back end at path (or adopts a connected fd: vu_front_adopt); each
 * request and its reply must be through within timeout_ms (0: VU_FRONT_TIMEOUT_MS), however
 * often the calling thread is interrupted, and give up at once (-ECANCELED) when stop_fd (an
 * eventfd that is written once, the VM's stop_fd; -1: none) is readable. Returns 0 or -errno. */
int vu_front_connect(struct vu_front *f, const char *path, const char *name, unsigned timeout_ms,
		     int stop_fd);
int vu_front_adopt(struct vu_front *f, int sock, const char *name, unsigned timeout_ms,
		   int stop_fd);
void vu_front_close(struct vu_front *f);

/* GET_FEATURES, GET/SET_PROTOCOL_FEATURES (REPLY_ACK required; MQ when offered), SET_OWNER,
 * GET_QUEUE_NUM (with MQ; must cover `queues`). Returns 0 or -errno (f->why says why). */
int vu_front_handshake(struct vu_front *f, unsigned queues);

/* SET_MEM_TABLE: every guest RAM window, each with the memfd and its offset. */
int vu_front_set_mem_table(struct vu_front *f, const struct gmem *gm);

/* SET_FEATURES: the driver's features, plus VHOST_USER_F_PROTOCOL_FEATURES. */
int vu_front_set_features(struct vu_front *f, uint64_t driver_features);

/* Starts ring idx: SET_VRING_NUM, BASE (0 for a fresh ring; where a stopped one stood),
 * ADDR (guest-physical rings checked through gmem_ptr, then named by front-end addresses:
 * a fixed base plus the offset in the RAM memfd, the same in every VMM process that maps
 * that RAM; SET_MEM_TABLE names the windows the same way), KICK, CALL, ENABLE. */
int vu_front_start_ring(struct vu_front *f, const struct gmem *gm, unsigned idx, unsigned num,
			uint16_t base, uint64_t desc, uint64_t avail, uint64_t used, int kick_fd,
			int call_fd);

/* Stops ring idx: GET_VRING_BASE; *base (may be NULL) gets the back end's next avail index. */
int vu_front_stop_ring(struct vu_front *f, unsigned idx, uint32_t *base);

#endif
