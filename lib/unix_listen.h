/* SPDX-License-Identifier: Apache-2.0 */
/* lib/unix_listen.h: the Unix sockets every bulkhead process uses — listening ones made
 * here, or handed over by the launcher as a descriptor and checked before use, and
 * connections to them. */
#ifndef BULKHEAD_LIB_UNIX_LISTEN_H
#define BULKHEAD_LIB_UNIX_LISTEN_H

#include <stdbool.h>

/* A listening stream socket at path (close-on-exec; non-blocking if asked).
 * Returns it, or -errno (-ENAMETOOLONG for a path sun_path cannot hold). */
int unix_listen(const char *path, int backlog, bool nonblock);

/* A stream socket connected to the listener at path (close-on-exec; non-blocking if
 * asked: a Unix connect completes or fails at once). Returns it, or -errno
 * (-ENAMETOOLONG for a path sun_path cannot hold). */
int unix_connect(const char *path, bool nonblock);

/* "--listen-fd N": parses N strictly (a decimal descriptor above 2), checks that
 * it is a listening Unix socket, and makes it close-on-exec (non-blocking if asked).
 * Returns the descriptor, or -errno (-EINVAL for a malformed N, -ENOTSOCK for a
 * descriptor that is not listening). */
int unix_listen_adopt(const char *fd_text, bool nonblock);
/* The same checks for a descriptor already in hand (e.g. received over a socket): a
 * listening Unix socket. Returns fd or -errno. */
int unix_listen_check(int fd, bool nonblock);

#endif
