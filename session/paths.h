/* SPDX-License-Identifier: Apache-2.0 */
/* session/paths.h: where the CLI finds its sibling programs and guest artefacts.
 * Layout (build tree and install alike): PREFIX/bin/{bulkhead,bulkhead-vmm},
 * PREFIX/lib/bulkhead/{vmlinux,bzImage,initramfs.cpio,guests/} (on arm64 the kernel is Image). */
#ifndef BULKHEAD_SESSION_PATHS_H
#define BULKHEAD_SESSION_PATHS_H

#include <stddef.h>

/* The guest kernel sessions boot unless told otherwise, in PREFIX/lib/bulkhead: the ELF
 * vmlinux on x86-64 (bulkhead-vmm and QEMU's PVH entry start it without decompression), the
 * arm64 boot Image on arm64. */
#if defined(__aarch64__)
#define PATHS_GUEST_KERNEL "Image"
#else
#define PATHS_GUEST_KERNEL "vmlinux"
#endif

/* Directory holding this executable (resolved from /proc/self/exe). */
const char *paths_bindir(void);
/* PREFIX/lib/bulkhead, or $BULKHEAD_LIBDIR when set (tests use it). */
const char *paths_libdir(void);
/* Writes "<dir>/<name>" into buf; returns 0, or -ENAMETOOLONG. */
int paths_join(char *buf, size_t len, const char *dir, const char *name);

#endif
