/* SPDX-License-Identifier: Apache-2.0 */
/* lib/io.c: whole reads and writes on blocking descriptors (see io.h). Used by the host's
 * programs and by bulkhead-init, so it needs nothing but libc. */
#include "lib/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int io_writev_full(int fd, const struct iovec *iov_in, int cnt)
{
	struct iovec iov[IO_IOV_MAX];
	int i = 0;

	if (cnt < 0 || cnt > IO_IOV_MAX)
		return -EINVAL;
	memcpy(iov, iov_in, (size_t)cnt * sizeof(*iov));
	/* Empty entries first, so that a write of 0 bytes below means no progress. */
	while (i < cnt && !iov[i].iov_len)
		i++;
	while (i < cnt) {
		ssize_t n = writev(fd, iov + i, cnt - i);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		while (i < cnt && (size_t)n >= iov[i].iov_len) {
			n -= (ssize_t)iov[i].iov_len;
			i++;
		}
		if (i < cnt) {
			iov[i].iov_base = (char *)iov[i].iov_base + n;
			iov[i].iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* read, or pread from OFF when AT is set, until LEN bytes or the end of the file. */
static ssize_t read_loop(int fd, void *buf, size_t len, bool at, off_t off)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = at ? pread(fd, p + got, len - got, off + (off_t)got)
			       : read(fd, p + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

ssize_t io_read_full(int fd, void *buf, size_t len)
{
	return read_loop(fd, buf, len, false, 0);
}

ssize_t io_pread_full(int fd, void *buf, size_t len, off_t off)
{
	return read_loop(fd, buf, len, true, off);
}

char *io_read_all(int fd, size_t max, size_t *len)
{
	char *buf = max < SIZE_MAX - 1 ? malloc(max + 2) : NULL;
	if (!buf) {
		errno = ENOMEM;
		return NULL;
	}
	ssize_t n = io_read_full(fd, buf, max + 1); /* one more: there is more than max */
	if (n < 0 || (size_t)n > max) {
		free(buf);
		errno = n < 0 ? (int)-n : ERANGE;
		return NULL;
	}
	buf[n] = '\0';
	if (len)
		*len = (size_t)n;
	return buf;
}

char *io_read_path(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = io_read_all(fd, max, len);
	int e = errno;
	close(fd);
	errno = e;
	return buf;
}

int io_write_full(int fd, const void *buf, size_t len)
{
	struct iovec iov = { (void *)(uintptr_t)buf, len };

	return io_writev_full(fd, &iov, 1);
}

int io_write_file_once(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, len);
	int e = n < 0 ? errno : EIO;
	close(fd);
	return n == (ssize_t)len ? 0 : -e;
}
