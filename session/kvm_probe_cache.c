/* SPDX-License-Identifier: Apache-2.0 */
/* session/kvm_probe_cache.c: the probe guests' verdicts, kept for this boot of this host's KVM
 * (session/kvm_probe.h). Every session's engine choice needs them, and running the probe
 * guests costs three VMM starts; what they find cannot change until /dev/kvm, the host's boot,
 * bulkhead-vmm or the probe guests do, so those name the file:
 * ${BULKHEAD_CACHE:-~/.cache/bulkhead}/probe/<SHA-256 of that list>. Anything else in the
 * file, or any failure to read or write it, means probing afresh. */
#include "session/kvm_probe.h"
#include "lib/cache_dir.h"
#include "lib/sha256_hex.h"
#include "session/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROBE_CACHE_FORMAT "bulkhead kvm probe 1"

static int put_identity(char *buf, size_t len, size_t *n, const char *name, const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -1;
	int w = snprintf(buf + *n, len - *n, "%s %llu %llu %llu %lld %lld.%09ld\n", name,
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_rdev,
			 (unsigned long long)st.st_ino, (long long)st.st_size,
			 (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	if (w < 0 || (size_t)w >= len - *n)
		return -1;
	*n += (size_t)w;
	return 0;
}

/* The cache file's path for what the verdicts depend on, or -1 (then nothing is cached). */
static int cache_path(const struct kvm_caps *caps, bool create, char *path, size_t len)
{
	char text[2048], boot[64] = "", vmm[PATH_MAX], guests[PATH_MAX], ring3[PATH_MAX],
			 loop[PATH_MAX], dir[PATH_MAX], err[256];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return -1;
	bool got = fgets(boot, sizeof(boot), f) != NULL;
	fclose(f);
	if (!got || !strchr(boot, '\n'))
		return -1;
	if (paths_join(vmm, sizeof(vmm), paths_bindir(), "bulkhead-vmm") ||
	    paths_join(guests, sizeof(guests), paths_libdir(), "guests") ||
	    paths_join(ring3, sizeof(ring3), guests, "ring3.bin") ||
	    paths_join(loop, sizeof(loop), guests, "loop.bin"))
		return -1;
	size_t n = (size_t)snprintf(text, sizeof(text), "%s\nboot %smodule %s\n",
				    PROBE_CACHE_FORMAT, boot, caps->module);
	if (n >= sizeof(text) || put_identity(text, sizeof(text), &n, "kvm", "/dev/kvm") ||
	    put_identity(text, sizeof(text), &n, "vmm", vmm) ||
	    put_identity(text, sizeof(text), &n, "ring3", ring3) ||
	    put_identity(text, sizeof(text), &n, "loop", loop))
		return -1;
	char hex[33];
	if (sha256_hex(text, n, hex, 32) < 0 ||
	    cache_dir(dir, sizeof(dir), "probe", "the KVM probe cache", create, err, sizeof(err)))
		return -1;
	int w = snprintf(path, len, "%s/%s", dir, hex);
	return w > 0 && (size_t)w < len ? 0 : -1;
}

/* "ring3 R\nnative K\nmips M\n", R and K verdicts. */
static bool parse(const char *s, struct kvm_caps *out)
{
	int r3, nat, end = 0;
	double mips;
	if (sscanf(s, "ring3 %d\nnative %d\nmips %lf\n%n", &r3, &nat, &mips, &end) != 3 ||
	    s[end] != '\0')
		return false;
	if ((r3 != PROBE_YES && r3 != PROBE_NO) || (nat != PROBE_YES && nat != PROBE_NO) ||
	    !(mips >= 0 && mips < 1e9))
		return false;
	out->ring3_syscall = (enum probe_result)r3;
	out->kernel_native = (enum probe_result)nat;
	out->kernel_mips = mips;
	return true;
}

bool kvm_probe_cache_get(struct kvm_caps *out)
{
	char path[PATH_MAX], buf[128];
	if (cache_path(out, false, path, sizeof(path)))
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return false;
	/* As it was written: a regular file of ours that no one else may write. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		close(fd);
		return false;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return parse(buf, out);
}

void kvm_probe_cache_put(const struct kvm_caps *caps)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16], text[128];
	/* Only verdicts: a probe that could not run says nothing lasting. */
	if (!caps->usable || caps->ring3_syscall == PROBE_UNKNOWN ||
	    caps->kernel_native == PROBE_UNKNOWN)
		return;
	if (cache_path(caps, true, path, sizeof(path)))
		return;
	int n = snprintf(text, sizeof(text), "ring3 %d\nnative %d\nmips %.3f\n",
			 (int)caps->ring3_syscall, (int)caps->kernel_native, caps->kernel_mips);
	if (n < 0 || (size_t)n >= sizeof(text) ||
	    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return;
	bool ok = write(fd, text, (size_t)n) == n;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) < 0)
		unlink(tmp);
}
