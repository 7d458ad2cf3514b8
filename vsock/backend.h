/* SPDX-License-Identifier: Apache-2.0 */
/* vsock/backend.h: the vhost-user device side of bulkhead-vsock — one front end (QEMU or
 * bulkhead-vmm) configures memory and rings of the vsock device through these messages. */
#ifndef BULKHEAD_VSOCK_BACKEND_H
#define BULKHEAD_VSOCK_BACKEND_H

#include "lib/vhost_user.h"
#include "vsock/vsock.h"

struct backend {
	struct vsock_dev *dev;
	uint64_t features;	    /* acked by SET_FEATURES */
	uint64_t protocol_features; /* acked by SET_PROTOCOL_FEATURES */
	uint64_t bad_requests;
};

/* Features we offer: VERSION_1 and protocol features (EVENT_IDX and INDIRECT_DESC are not
 * offered: Linux's vsock driver does not need them and every feature is more to check). */
uint64_t backend_features(void);
uint64_t backend_protocol_features(void);

/*
 * Handles one checked request. Sends the reply (GET_*) itself; *status is what a REPLY_ACK
 * carries (0 or a positive errno). Returns 0, or -errno when the front end is beyond repair
 * (cannot reply). A request we do not serve, or bad values, give *status != 0 and are counted.
 */
int backend_handle(struct backend *b, int sock, struct vhost_user_msg *m, uint64_t *status);

#endif
