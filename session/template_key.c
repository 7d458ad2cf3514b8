/* SPDX-License-Identifier: Apache-2.0 */
/* session/template_key.c: a template's name from what it depends on, its shape file, and
 * the cache's templates listed and removed (session/template_key.h). */
#include "session/template_key.h"
#include "session/engine.h"
#include "lib/cache_dir.h"
#include "lib/errbuf.h"
#include "lib/sha256_hex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define TEMPLATE_FORMAT "bulkhead template 2"
#define SHAPE_MAX	(64 << 10) /* a shape file is a few hundred bytes */
#define KEY_NO_CPUID	(-1000)	   /* key_text: KVM could not be asked (plus -errno) */

/* The CPU features this host's KVM offers, hashed; "none" on arm64 (its templates are not
 * made). Only the feature words (and the vendor, family and model), not the whole table:
 * some leaves hold the APIC ID of whichever CPU answered the ioctl. 0, or -errno when KVM
 * cannot be asked. */
static int host_cpuid(char *hex, size_t len)
{
	int rc = 0;
	snprintf(hex, len, "none");
#if defined(__x86_64__) /* (arm64 templates are not made: its VMM saves no guest yet) */
	static const struct {
		uint32_t fn, idx, regs; /* bit r: register r (EAX, EBX, ECX, EDX) */
	} words[] = { { 0, 0, 0xf },	      { 1, 0, 0xd },	     { 7, 0, 0xe },
		      { 7, 1, 0x1 },	      { 0xd, 0, 0x9 },	     { 0xd, 1, 0x1 },
		      { 0x80000001, 0, 0xc }, { 0x80000008, 0, 0x1 } };
	enum { MAX = 512 };
	uint32_t v[sizeof(words) / sizeof(words[0])][4] = { { 0 } };
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + MAX * sizeof(c->entries[0]));
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	rc = !c ? -ENOMEM : kvm < 0 ? -errno : 0;
	if (!rc) {
		c->nent = MAX;
		if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c) < 0 || len <= 32) {
			rc = -errno;
		} else {
			for (uint32_t i = 0; i < c->nent; i++)
				for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
					const struct kvm_cpuid_entry2 *e = &c->entries[i];
					uint32_t r[4] = { e->eax, e->ebx, e->ecx, e->edx };
					if (e->function != words[w].fn || e->index != words[w].idx)
						continue;
					for (int k = 0; k < 4; k++)
						v[w][k] = (words[w].regs >> k & 1) ? r[k] : 0;
				}
			sha256_hex(v, sizeof(v), hex, 32);
		}
	}
	if (kvm >= 0)
		close(kvm);
	free(c);
#endif
	return rc;
}

/* host_cpuid, asked once per process (`template ls` names every template with it). */
static int host_cpuid_once(char *hex, size_t len)
{
	static char kept[40];
	static int rc = 1;
	if (rc == 1)
		rc = host_cpuid(kept, sizeof(kept));
	snprintf(hex, len, "%s", kept);
	return rc;
}

static int key_text(const struct template_inputs *in, char *buf, size_t len)
{
	char vmm[PATH_MAX], cpuid[40];
	struct utsname u;
	const char *files[] = { in->kernel, in->initrd, vmm };
	if (engine_vmm_path(vmm, sizeof(vmm)) || uname(&u) < 0)
		return -ENAMETOOLONG;
	size_t n = (size_t)snprintf(buf, len, "%s\nmem %u cpus %u\ncmdline %s\n", TEMPLATE_FORMAT,
				    in->mem_mib, in->cpus, in->cmdline);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]) && n < len; i++) {
		struct stat st;
		if (stat(files[i], &st) < 0)
			return -errno;
		n += (size_t)snprintf(buf + n, len - n, "file %llu %llu %lld %lld.%09ld\n",
				      (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
				      (long long)st.st_size, (long long)st.st_ctim.tv_sec,
				      st.st_ctim.tv_nsec);
	}
	/* The devices, in the order the engine gives them (session_helpers.c's engine_start). */
	for (size_t i = 0; i < sizeof(in->fs) / sizeof(in->fs[0]) && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "fs%zu %d\n", i, in->fs[i]);
	/* The host last: a file that is gone says more than a KVM that cannot be asked. */
	int rc = host_cpuid_once(cpuid, sizeof(cpuid));
	if (rc < 0)
		return KEY_NO_CPUID + rc;
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, "host %s cpuid %s\n", u.release, cpuid);
	return n < len ? 0 : -ENAMETOOLONG;
}

int template_name(const struct template_inputs *in, char *name, char *err, size_t errlen)
{
	char text[8192];
	int rc = key_text(in, text, sizeof(text));
	if (rc <= KEY_NO_CPUID)
		return errbuf_fail(err, errlen, -2,
				   "--template: cannot ask KVM for this host's CPU: /dev/kvm: %s",
				   strerror(KEY_NO_CPUID - rc));
	if (rc < 0)
		return errbuf_fail(err, errlen, -1, "--template: %s", strerror(-rc));
	if (sha256_hex(text, strlen(text), name, TEMPLATE_NAME_LEN) < 0)
		return errbuf_fail(err, errlen, -1, "--template: SHA-256 failed");
	return 0;
}

/* path with ".snap" replaced by ext; 0 or -1. */
static int beside(const char *snap, const char *ext, char *out, size_t len)
{
	size_t n = strlen(snap);
	if (n < 5 || strcmp(snap + n - 5, ".snap") ||
	    snprintf(out, len, "%.*s%s", (int)(n - 5), snap, ext) >= (int)len)
		return -1;
	return 0;
}

void template_shape_write(const char *snap_path, const struct template_inputs *in)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:s, s:[b,b,b,b]}", "mem_mib",
			      (json_int_t)in->mem_mib, "cpus", (json_int_t)in->cpus, "cmdline",
			      in->cmdline, "kernel", in->kernel, "initrd", in->initrd, "fs",
			      in->fs[0], in->fs[1], in->fs[2], in->fs[3]);
	if (o && beside(snap_path, ".json", path, sizeof(path)) == 0 &&
	    snprintf(tmp, sizeof(tmp), "%s.tmp", path) < (int)sizeof(tmp)) {
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		char *text = json_dumps(o, JSON_COMPACT);
		bool ok = fd >= 0 && text && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
		if (fd >= 0)
			ok = close(fd) == 0 && ok;
		if (!ok || rename(tmp, path) < 0)
			unlink(tmp);
		free(text);
	}
	json_decref(o);
}

/* Reads NAME.json into t and says whether NAME still follows from it. */
static void read_shape(const char *dir, struct template_info *t)
{
	char path[PATH_MAX], name[TEMPLATE_NAME_LEN + 1], err[200];
	struct template_inputs in = { 0 };
	const char *cmdline = NULL;
	json_error_t je;
	int fs[4] = { 0 };

	json_t *o = NULL;
	/* Ours to write, but read as any file: a regular one (no link, FIFO or device), small. */
	int fd = snprintf(path, sizeof(path), "%s/%s.json", dir, t->name) < (int)sizeof(path)
			 ? open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
			 : -1;
	bool none = fd < 0 && errno == ENOENT;
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= SHAPE_MAX)
		o = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	if (fd >= 0)
		close(fd);
	if (!o) {
		t->state = none ? TEMPLATE_STALE : TEMPLATE_UNKNOWN;
		snprintf(t->why, sizeof(t->why), "%s",
			 none ? "stale: no shape file (made by an older bulkhead)"
			      : "unknown: its shape file is malformed (or not a small regular "
				"file)");
		return;
	}
	json_int_t mem = 0, cpus = 0;
	if (json_unpack(o, "{s:I, s:I, s:s, s:s, s:s, s:[bbbb!]}", "mem_mib", &mem, "cpus", &cpus,
			"cmdline", &cmdline, "kernel", &in.kernel, "initrd", &in.initrd, "fs",
			&fs[0], &fs[1], &fs[2], &fs[3]) ||
	    mem <= 0 || mem > 1 << 24 || cpus <= 0 || cpus > 1024 ||
	    strlen(cmdline) >= sizeof(in.cmdline)) {
		t->state = TEMPLATE_UNKNOWN;
		snprintf(t->why, sizeof(t->why), "unknown: its shape file is malformed");
		json_decref(o);
		return;
	}
	t->shape = true;
	t->mem_mib = in.mem_mib = (unsigned)mem;
	t->cpus = in.cpus = (unsigned)cpus;
	memcpy(in.cmdline, cmdline, strlen(cmdline) + 1);
	for (int i = 0; i < 4; i++)
		t->fs[i] = in.fs[i] = fs[i];
	int rc = template_name(&in, name, err, sizeof(err));
	t->state = rc == -2			     ? TEMPLATE_UNKNOWN
		   : rc < 0 || strcmp(name, t->name) ? TEMPLATE_STALE
						     : TEMPLATE_CURRENT;
	if (rc == -2)
		snprintf(t->why, sizeof(t->why), "unknown: %.140s", err + strlen("--template: "));
	else if (rc < 0)
		snprintf(t->why, sizeof(t->why),
			 "stale: its kernel, initramfs or bulkhead-vmm is gone");
	else if (t->state == TEMPLATE_STALE)
		snprintf(t->why, sizeof(t->why),
			 "stale: its kernel, initramfs, bulkhead-vmm, host kernel or CPU changed");
	json_decref(o);
}

static int snap_filter(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	if (n != TEMPLATE_NAME_LEN + 5 || strcmp(e->d_name + TEMPLATE_NAME_LEN, ".snap"))
		return 0;
	return strspn(e->d_name, "0123456789abcdef") == TEMPLATE_NAME_LEN;
}

int template_list(struct template_info **out, size_t *n, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct dirent **names = NULL;
	struct stat dst;
	*out = NULL;
	*n = 0;
	if (cache_dir(dir, sizeof(dir), "templates", "the template cache", false, err, errlen) < 0)
		return -1;
	if (lstat(dir, &dst) < 0 && errno == ENOENT)
		return 0; /* no template made yet */
	if (cache_dir_check(dir, "the template cache", err, errlen) < 0)
		return -1;
	int k = scandir(dir, &names, snap_filter, alphasort);
	if (k < 0)
		return errbuf_fail(err, errlen, -1, "%s: %s", dir, strerror(errno));
	*out = calloc((size_t)k + 1, sizeof(**out));
	for (int i = 0; i < k; i++) {
		struct template_info *t = &(*out)[*n];
		struct stat st;
		char path[PATH_MAX];
		if (*out &&
		    snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) <
			    (int)sizeof(path) &&
		    lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			memcpy(t->name, names[i]->d_name, TEMPLATE_NAME_LEN);
			t->bytes = (long long)st.st_blocks * 512;
			t->made = (long long)st.st_mtim.tv_sec;
			read_shape(dir, t);
			if (st.st_uid != geteuid() ||
			    (st.st_mode & 077)) { /* as a session sees it */
				t->state = TEMPLATE_STALE;
				snprintf(t->why, sizeof(t->why),
					 "stale: not ours, or others may read it: sessions refuse "
					 "it");
			}
			(*n)++;
		}
		free(names[i]);
	}
	free(names);
	return *out ? 0 : errbuf_fail(err, errlen, -1, "out of memory");
}

int template_remove(const char *name, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX];
	if (strlen(name) != TEMPLATE_NAME_LEN ||
	    strspn(name, "0123456789abcdef") != TEMPLATE_NAME_LEN)
		return errbuf_fail(err, errlen, -1, "'%s' is not a template's name", name);
	if (cache_dir(dir, sizeof(dir), "templates", "the template cache", false, err, errlen) <
		    0 ||
	    cache_dir_check(dir, "the template cache", err, errlen) < 0)
		return -1;
	if (snprintf(path, sizeof(path), "%s/%s.snap", dir, name) >= (int)sizeof(path))
		return errbuf_fail(err, errlen, -1, "the template cache's path is too long");
	if (unlink(path) < 0)
		return errbuf_fail(err, errlen, -1, "%s: %s", path, strerror(errno));
	memcpy(path + strlen(path) - 5, ".json", 5);
	unlink(path); /* (a template made by an older bulkhead has none) */
	return 0;
}

bool template_file_ours(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & 077);
}
