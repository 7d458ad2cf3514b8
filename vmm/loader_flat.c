/* vmm/loader_flat.c: the simplest loader — file bytes to one RAM range, bounds-checked. */
#include "vmm/loader_flat.h"

#include "vmm/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int loader_flat_load(const struct gmem *gm, const char *path, uint64_t gpa, uint64_t *size_out)
{
	char what[512];
	struct stat st;
	int err = 0;

	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		snprintf(what, sizeof(what), "cannot open guest image %s", path);
		vmm_log_setup(what, err, "check the path (test guests are built by make)");
		return -err;
	}
	if (fstat(fd, &st) < 0) {
		err = errno;
		snprintf(what, sizeof(what), "cannot stat guest image %s", path);
		vmm_log_setup(what, err, NULL);
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		err = ENOEXEC;
		snprintf(what, sizeof(what), "guest image %s is empty or not a regular file", path);
		vmm_log_setup(what, 0, "rebuild it with make");
		goto out;
	}
	uint8_t *dst = gmem_ptr(gm, gpa, (uint64_t)st.st_size);
	if (!dst) {
		err = EFBIG;
		snprintf(what, sizeof(what),
			 "guest image %s (%lld bytes) does not fit in RAM at 0x%llx", path,
			 (long long)st.st_size, (unsigned long long)gpa);
		vmm_log_setup(what, 0, "give the guest more --mem");
		goto out;
	}
	for (off_t done = 0; done < st.st_size;) {
		ssize_t n = read(fd, dst + done, (size_t)(st.st_size - done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			snprintf(what, sizeof(what), "cannot read guest image %s", path);
			vmm_log_setup(what, err,
				      n == 0 ? "the file shrank while being read" : NULL);
			goto out;
		}
		done += n;
	}
	if (size_out)
		*size_out = (uint64_t)st.st_size;
out:
	close(fd);
	return -err;
}
