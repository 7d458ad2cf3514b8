/* SPDX-License-Identifier: Apache-2.0 */
/* lib/boot_args.h: what the host tells bulkhead-init on the kernel command line (v2).
 * Only set-up facts travel here; commands go over vsock (lib/agent_proto.h).
 *
 *   bulkhead.work=rw|ro  the virtio-fs tag BOOT_ARGS_WORK_TAG is to be mounted at
 *                        BOOT_ARGS_WORK_DIR
 *                        (ro is enforced on the host; the guest flag only gives
 *                        early errors)
 *   bulkhead.broker=1    the session has a credential broker on vsock port 1026:
 *                        init installs its session CA (lib/agent_proto.h)
 *   bulkhead.image=UID:GID[:G1,G2...]
 *                        the virtio-fs tag BOOT_ARGS_IMAGE_TAG is the commands' root (init
 *                        mounts it at BOOT_ARGS_IMAGE_DIR, with /proc, /sys, /dev and the
 *                        work share inside, and starts every command there, chrooted) and
 *                        they run as UID, GID and the supplementary groups G1...
 *   bulkhead.hostname=NAME  the guest's host name (default "bulkhead")
 *   bulkhead.bindN=rw|ro:PATH  (N = 0, 1) the virtio-fs tag "bindN" is to be mounted at PATH
 *                        (an OCI bundle's bind mounts); letters, digits and "/._-+@" only
 *   bulkhead.template=1  a template (session/template.c): init waits on vsock for the session
 *                        it becomes once restored, whose bulkhead.* words then come from the
 *                        host instead (guest/init/template.c)
 */
#ifndef BULKHEAD_LIB_BOOT_ARGS_H
#define BULKHEAD_LIB_BOOT_ARGS_H

#define BOOT_ARGS_WORK		"bulkhead.work="
#define BOOT_ARGS_BROKER	"bulkhead.broker="
#define BOOT_ARGS_IMAGE		"bulkhead.image="
#define BOOT_ARGS_HOSTNAME	"bulkhead.hostname="
#define BOOT_ARGS_BIND		"bulkhead.bind" /* then N= */
#define BOOT_ARGS_BIND_TAG	"bind"		/* then N */
#define BOOT_ARGS_TEMPLATE	"bulkhead.template=" /* 1: wait for the session (guest/init/template.c) */
#define BOOT_ARGS_HOSTNAME_MAX	63
#define BOOT_ARGS_BIND_DEST_MAX 200
#define BOOT_ARGS_CMDLINE_MAX	2048 /* COMMAND_LINE_SIZE on x86, including the NUL */

/* The work share: the host's virtio-fs device has this tag (virtiofsd's device under either
 * engine), the guest mounts it at this path and starts commands there. */
#define BOOT_ARGS_WORK_TAG "work"
#define BOOT_ARGS_WORK_DIR "/work"
/* An image's root (--image). */
#define BOOT_ARGS_IMAGE_TAG "image"
#define BOOT_ARGS_IMAGE_DIR "/image"

#endif
