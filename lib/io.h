/* SPDX-License-Identifier: Apache-2.0 */
/* lib/io.h: whole reads and writes on blocking descriptors — the loops that retry after EINTR
 * and short transfers, written once. Loops with a deadline or a stop to give way to
 * (lib/vhost_user.c, vmm/stopwait.c, session/out.c) are not these and keep their own. */
#ifndef BULKHEAD_LIB_IO_H
#define BULKHEAD_LIB_IO_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The most iovec entries io_writev_full takes. */
#define IO_IOV_MAX 8

/* Writes all LEN bytes of BUF. 0, or a negative errno (-EIO if the descriptor takes none). */
int io_write_full(int fd, const void *buf, size_t len);

/* Writes all of IOV[0..CNT) (CNT at most IO_IOV_MAX, else -EINVAL), in as few calls as the
 * descriptor allows. 0, or a negative errno. */
int io_writev_full(int fd, const struct iovec *iov, int cnt);

/* Reads until LEN bytes or end of file. Returns the count (less than LEN only at end of file),
 * or a negative errno. */
ssize_t io_read_full(int fd, void *buf, size_t len);

/* The same from offset OFF, leaving the descriptor's position alone. */
ssize_t io_pread_full(int fd, void *buf, size_t len, off_t off);

/* The whole of what FD reads until its end, at most MAX bytes, NUL-terminated (malloc'd;
 * *LEN its length when LEN is not NULL). NULL with errno: ERANGE when there is more than MAX,
 * else the read's. The one whole-file reader (io_read_path: the same for a file by name). */
char *io_read_all(int fd, size_t max, size_t *len);
char *io_read_path(const char *path, size_t max, size_t *len);

/* Writes TEXT to the existing file PATH in one write: what kernel files (uid_map,
 * cgroup.procs, a cgroup's limits) need, since they take a value whole or not at all.
 * 0, or a negative errno (-EIO for a short write). */
int io_write_file_once(const char *path, const char *text);

#endif
