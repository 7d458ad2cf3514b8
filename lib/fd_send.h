/* SPDX-License-Identifier: Apache-2.0 */
/* lib/fd_send.h: one message with one descriptor attached (SCM_RIGHTS) on a Unix socket: the
 * shared broker's listener (session/broker_dev.c), an overlay from its builder (session/share_image.c),
 * a terminal to an OCI caller (oci/console.c). */
#ifndef BULKHEAD_LIB_FD_SEND_H
#define BULKHEAD_LIB_FD_SEND_H

#include <stddef.h>
#include <sys/types.h>

/* sendmsg(2) of LEN bytes of BUF with FD attached (none when FD < 0), without SIGPIPE.
 * Returns what sendmsg returns (the bytes sent, or -1 with errno). */
ssize_t fd_send(int sock, const void *buf, size_t len, int fd);

#endif
