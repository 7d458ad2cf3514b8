/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/vsock_drv.h: a minimal virtio-mmio vsock driver (the guest's side) and the ring
 * restart scenarios of tests/e2e (a queue toggled QueueReady 0 -> 1, a device reset and
 * re-initialisation, a reset while a connection is busy). Freestanding: the same code runs in
 * the test guest tests/guests/vsock.c under bulkhead-vmm with KVM, and in the host probe
 * tests/tools/vsock_restart_probe.c, which plays the guest through bulkhead-vmm's own
 * virtio-mmio transport without KVM. Each side supplies the vd_plat_* hooks. */
#ifndef BULKHEAD_TESTS_GUESTS_VSOCK_DRV_H
#define BULKHEAD_TESTS_GUESTS_VSOCK_DRV_H

#include <stdbool.h>
#include <stdint.h>

/* The host side's listeners (tests/tools/vsock_restart_probe.c serve): PREFIX_5000 echoes
 * every byte back, PREFIX_5001 sends a byte pattern until the connection goes away. */
#define VD_PORT_ECHO   5000
#define VD_PORT_STREAM 5001

#define VD_QSIZE     16	  /* ring entries, each queue */
#define VD_RX_BUF    4096 /* one rx buffer: header + data */
#define VD_BUF_ALLOC 65536
#define VD_AREA_SIZE 0x30000 /* rings and buffers, at the area given to vd_init */
#define VD_MSG_MAX   256

/* Failure codes (a scenario returns 0 or one of these; the guest exits with it). */
enum vd_err {
	VD_E_NODEV = 1, /* no virtio-vsock window found */
	VD_E_FEATURES,	/* FEATURES_OK not accepted */
	VD_E_QUEUE,	/* a queue could not be made ready */
	VD_E_STATUS,	/* DRIVER_OK not reached, or the device asks for a reset */
	VD_E_TX,	/* a tx packet was not consumed in time */
	VD_E_CONNECT,	/* no RESPONSE (or an RST) to a REQUEST */
	VD_E_ECHO,	/* the echo did not come back whole and unchanged */
	VD_E_STREAM,	/* the stream did not deliver */
	VD_E_RING,	/* the device's used ring is inconsistent */
	VD_E_CID,	/* the config space's guest CID is not the one given */
	VD_E_PLATFORM,	/* the host side's own checks (probe only) */
};

/* Hooks each side provides. Guest-physical addresses throughout. */
uint32_t vd_plat_read32(uint64_t gpa);		/* MMIO register */
void vd_plat_write32(uint64_t gpa, uint32_t v); /* MMIO register */
void vd_plat_notify(uint64_t gpa, uint32_t q);	/* QueueNotify: q to the window at gpa */
void *vd_plat_ptr(uint64_t gpa, uint64_t len);	/* guest RAM */
uint64_t vd_plat_now(void);			/* a monotonic count ... */
uint64_t vd_plat_timeout(void);			/* ... and how many of it a wait may take */
void vd_plat_relax(void);			/* between two looks at a ring */
void vd_plat_say(const char *s);		/* a line of progress, "\n" included */
void vd_plat_between(void); /* reset_busy: after the reset and notifies, before re-init */

struct vd_ring {
	uint64_t desc, avail, used; /* guest-physical */
	uint16_t next_avail;	    /* our avail index */
	uint16_t used_seen;	    /* used entries consumed */
};

struct vd {
	uint64_t base; /* the device's MMIO window */
	uint64_t area; /* VD_AREA_SIZE bytes of guest RAM for rings and buffers */
	uint64_t cid;  /* the guest's CID, from the config space */
	struct vd_ring q[3];
	/* The one connection at a time the scenarios use. */
	uint32_t lport, rport;
	bool connected, reset_seen;
	uint32_t fwd_cnt; /* bytes consumed (our credit for the host) */
	uint32_t in_len;  /* bytes received so far in `in` */
	uint8_t in[VD_MSG_MAX];
	uint32_t stream_bytes; /* stream port: bytes received (all checked) */
	bool stream_bad;
	uint32_t next_port;
};

/* Finds the vsock window among `windows` 4 KiB windows from base. 0 or VD_E_NODEV. */
int vd_probe(struct vd *v, uint64_t base, unsigned windows, uint64_t area);

/* What Linux's virtio_mmio + vsock drivers do: reset, ACKNOWLEDGE, DRIVER, features
 * (VERSION_1), FEATURES_OK, three queues ready (fresh rings), DRIVER_OK, rx buffers posted. */
int vd_init(struct vd *v);

/* Writes 0 to Status (the device and its rings stop). */
void vd_reset(struct vd *v);

/* One echo round trip on a fresh connection to VD_PORT_ECHO: 0 or a vd_err. */
int vd_echo(struct vd *v, const char *msg);

/* The scenarios: each ends with a working device and returns 0, or a vd_err. */
int vd_scenario_basic(struct vd *v);	  /* init, echo */
int vd_scenario_toggle(struct vd *v);	  /* rx and tx QueueReady 0 -> 1, echo */
int vd_scenario_reset(struct vd *v);	  /* reset, re-init, echo */
int vd_scenario_reset_busy(struct vd *v); /* stream, reset mid-flow, notify, re-init, echo */

#endif
