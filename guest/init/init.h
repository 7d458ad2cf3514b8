/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/init.h: bulkhead-init, the guest's PID 1 — shared internal declarations. */
#ifndef BULKHEAD_GUEST_INIT_H
#define BULKHEAD_GUEST_INIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* console.c: frames to the host over the serial console (lib/console_frame.h). */
int console_open(const char *dev);
int console_send(int type, const void *buf, size_t len);
/* printf-style one-line error from init itself, as a CFRAME_ERROR frame. */
void console_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cmdline.c: finds NAME (e.g. "bulkhead.work=") among the kernel's parameters. Returns 1
 * with its value (not NUL-terminated) in val/len, 0 when absent, or -errno. */
int cmdline_param(const char *name, const char **val, size_t *len);
/* A restored template's session arguments (template.c) stand in for the kernel's from now
 * on. Returns 0 or -E2BIG. */
int cmdline_replace(const char *args);

/* vsock.c: a socket listening on PORT, or one connected to the host's PORT; -errno. */
int vsock_listen(unsigned port);
int vsock_connect_host(unsigned port);

/* template.c: with bulkhead.template=1, waits (where the host saves the VM) for the session a
 * restored guest becomes: fresh entropy, the wall clock, the session's arguments. Returns 1
 * when it was a template and the session is applied, 0 when this is no template, or -errno
 * with why in a console frame. */
int template_wait(void);

/* setup.c: mounts and console log level, then (once the session's arguments are known)
 * the hostname. Each returns 0 or -errno. */
int setup_system(void);
int setup_hostname(void);

/* image.c: the commands' root and user: an image's (bulkhead.image=), or the initramfs's
 * ("/" as root: dir NULL). */
#define GUEST_ROOT_GIDS_MAX    32
#define GUEST_RUNTIME_DIR      "/usr/lib/bulkhead"
#define GUEST_RUNTIME_IN_IMAGE "/run/bulkhead"
struct guest_root {
	const char *dir; /* where the image is mounted; NULL: no image */
	uid_t uid;
	gid_t gid;
	gid_t gids[GUEST_ROOT_GIDS_MAX];
	size_t ngids;
};
extern struct guest_root guest_root;
/* Mounts the image with /proc, /sys and /dev inside when the host gave one. Returns 1 when
 * mounted, 0 when there is none, or -errno. */
int image_mount(void);

/* work.c: mounts the work share at /work (in the image's root, when there is one) when the
 * host gave one (bulkhead.work=).
 * Returns 1 when mounted, 0 when there is none, or -errno. */
int work_mount(void);
/* The binds (bulkhead.bindN=): 0, or -errno. */
int binds_mount(void);

/* proxy_shim.c: brings up loopback and relays 127.0.0.1:3128 to the broker's vsock
 * port, in a child process. Returns 0 or -errno. */
int proxy_shim_start(void);
/* proxy_ca.c: when the session has a broker (bulkhead.broker=1), fetches the session CA's
 * certificate from it and makes it the guest's only trusted CA. Returns 0, or -errno
 * with why in a console frame. */
int proxy_trust_session_ca(void);

/* agent.c: serves exec requests over vsock until the host ends the session;
 * returns then (or at once, with an error frame sent, if it cannot start). */
void agent_run(void);

/* Stops everything and turns the machine off; never returns. */
void init_poweroff(void) __attribute__((noreturn));

#endif
