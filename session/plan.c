/* SPDX-License-Identifier: Apache-2.0 */
/* session/plan.c: a request resolved into a session's plan (see plan.h), step by step: the
 * guest's files, the work share, the scope's grants, the global policy, the session's end,
 * the engine and the kernel command line. */
#include "session/plan.h"
#include "jail/cgroup.h"
#include "session/paths.h"
#include "session/share_reach.h"
#include "lib/cache_dir.h"
#include "jail/jail.h"
#include "lib/io.h"

#include "broker/rules.h"

/* A scope file's size, at most (as the broker reads one). */
#define SCOPE_MAX (1 << 20)

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Accepts what this architecture boots (x86-64: an ELF vmlinux or a bzImage; arm64: an arm64
 * Image); anything else is a clear error. */
static int check_kernel(const char *path, char *err, size_t errlen)
{
	unsigned char hdr[0x210];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "kernel %s: %s (run 'make' or pass --kernel)", path,
			 strerror(errno));
		return -1;
	}
	ssize_t n = read(fd, hdr, sizeof(hdr));
	close(fd);
#if defined(__aarch64__)
	bool ok = n >= 0x40 && memcmp(hdr + 0x38, "ARM\x64", 4) == 0;
	const char *want = "an arm64 Image";
#else
	bool ok = (n >= 4 && memcmp(hdr, "\177ELF", 4) == 0) ||
		  (n >= 0x206 && memcmp(hdr + 0x202, "HdrS", 4) == 0);
	const char *want = "an ELF vmlinux or a bzImage";
#endif
	if (!ok) {
		snprintf(err, errlen, "kernel %s: not %s", path, want);
		return -1;
	}
	return 0;
}

/* The guest's kernel and initramfs: as asked, or ours. The ELF vmlinux boots faster than the
 * bzImage (no decompression): QEMU enters it through its PVH note, bulkhead-vmm directly. */
static int plan_files(struct session_plan *p, char *err, size_t errlen)
{
	const struct session_request *r = &p->req;
	if (r->kernel)
		snprintf(p->kernel, sizeof(p->kernel), "%s", r->kernel);
	else
		paths_join(p->kernel, sizeof(p->kernel), paths_libdir(), PATHS_GUEST_KERNEL);
	/* On an image, commands run in the image's root and never see the initramfs's tools
	 * layer (curl, git: 30 MB): the base initramfs boots faster (bench/image-session.sh). */
	if (r->initrd)
		snprintf(p->initrd, sizeof(p->initrd), "%s", r->initrd);
	else
		paths_join(p->initrd, sizeof(p->initrd), paths_libdir(),
			   r->image || r->root ? "initramfs-base.cpio" : "initramfs.cpio");
	if (check_kernel(p->kernel, err, errlen) < 0)
		return -1;
	if (access(p->initrd, R_OK) < 0) {
		snprintf(err, errlen, "initrd %s: %s (run 'make' or pass --initrd)", p->initrd,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* Reads the scope file once, through one descriptor: its text into p->scope_text and where
 * the kernel found it into p->scope_real. 0, or -1 with err. */
static int scope_read(struct session_plan *p, char *err, size_t errlen)
{
	const char *path = p->req.broker.scope;
	/* No symbolic link on the way, as for a share: a link a guest could repoint (one in an
	 * earlier session's share) must not choose the next session's scope. */
	int at = jail_open_nofollow(path, 0);
	if (at == -ELOOP)
		return share_fs_link_error("--scope", path, "file", err, errlen);
	char self[32];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", at);
	int fd = at < 0 ? at : open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (at >= 0)
		close(at);
	if (fd < 0 && at < 0)
		errno = -at;
	struct stat st = { 0 };
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size >= SCOPE_MAX) {
		snprintf(err, errlen, "--scope %s: %s", path,
			 fd < 0			? strerror(errno)
			 : !S_ISREG(st.st_mode) ? "not a regular file"
						: "larger than 1 MiB");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ssize_t r = readlink(self, p->scope_real, sizeof(p->scope_real) - 1);
	/* Its size as fstat saw it, and one byte more to see a file that grows meanwhile. */
	size_t cap = (size_t)st.st_size + 1;
	p->scope_text = malloc(cap + 1);
	ssize_t got = p->scope_text ? io_read_full(fd, p->scope_text, cap) : 0;
	close(fd);
	if (r <= 0 || (size_t)r >= sizeof(p->scope_real) - 1 || !p->scope_text || got < 0 ||
	    (size_t)got == cap) {
		snprintf(err, errlen, "--scope %s: %s", path,
			 r <= 0 || (size_t)r >= sizeof(p->scope_real) - 1
				 ? "cannot tell where it is"
			 : !p->scope_text ? "out of memory"
			 : got < 0	  ? strerror((int)-got)
					  : "it changed while it was read");
		return -1;
	}
	p->scope_real[r] = '\0';
	p->scope_text[got] = '\0';
	p->req.broker.scope_text = p->scope_text;
	return 0;
}

/* The scope file, its grants, and the global policy over everything asked so far. */
static int plan_rules(struct session_plan *p, char *err, size_t errlen)
{
	struct rules scope;
	char why[512];
	int rc = 0;
	memset(&scope, 0, sizeof(scope));
	if (p->req.broker.scope) {
		if (scope_read(p, err, errlen) < 0)
			return -1;
		if (rules_load_json(&scope, p->scope_text, why, sizeof(why))) {
			snprintf(err, errlen, "--scope %s: %s", p->req.broker.scope, why);
			return -1;
		}
		rc = plan_scope(p, &scope, err, errlen);
	}
	if (!rc)
		rc = plan_policy(p, &scope, err, errlen);
	rules_free(&scope);
	return rc;
}

/* The earlier of the timeout (or the policy's lifetime) and the scope's expiry. */
static int plan_end(struct session_plan *p, char *err, size_t errlen)
{
	if (!p->expires_at)
		return 0;
	double left = difftime((time_t)p->expires_at, time(NULL));
	if (left <= 0) {
		snprintf(err, errlen, "--scope %s: expired at %s", p->req.broker.scope, p->expiry);
		return -1;
	}
	if (p->timeout_s == 0 || p->timeout_s > left) {
		p->timeout_s = left;
		p->end_kind = END_EXPIRY;
	}
	return 0;
}

/* A value for the kernel command line: no space, quote or control character can end it or
 * start another parameter; init checks it again. */
static bool cmdline_safe(const char *v, size_t max)
{
	size_t n = strlen(v);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("/._-+@", v[i]))
			return false;
	return true;
}

/* bulkhead.hostname= and bulkhead.bindN= (lib/boot_args.h) when asked; each bind's directory
 * resolved as the work share's is (no symbolic link on its path). */
static int plan_guest_names(struct session_plan *p, char *err, size_t errlen)
{
	const struct session_request *r = &p->req;
	size_t len = strlen(p->cmdline), cap = sizeof(p->cmdline);
	int n = 0;
	if (r->hostname) {
		if (!cmdline_safe(r->hostname, BOOT_ARGS_HOSTNAME_MAX) ||
		    r->hostname[strcspn(r->hostname, "/+@")]) {
			snprintf(err, errlen,
				 "host name '%.80s': only letters, digits, '.', '-' "
				 "and '_', at most %d",
				 r->hostname, BOOT_ARGS_HOSTNAME_MAX);
			return -1;
		}
		n = snprintf(p->cmdline + len, cap - len, " %s%s", BOOT_ARGS_HOSTNAME, r->hostname);
		len += n > 0 ? (size_t)n : 0;
	}
	for (size_t i = 0; i < r->nbinds && i < SESSION_BINDS_MAX && n >= 0 && len < cap; i++) {
		const char *d = r->binds[i].dest;
		if (d[0] != '/' || !cmdline_safe(d, BOOT_ARGS_BIND_DEST_MAX) || strstr(d, "/..") ||
		    strstr(d, "//") || strcmp(d, "/") == 0) {
			snprintf(err, errlen,
				 "mount destination '%.80s': an absolute path of "
				 "letters, digits and '/._-+@', without '..', at most %d",
				 d, BOOT_ARGS_BIND_DEST_MAX);
			return -1;
		}
		if (share_fs_resolve(r->binds[i].src, r->binds[i].ro, "mount source", &p->binds[i],
				     err, errlen) < 0)
			return -1;
		n = snprintf(p->cmdline + len, cap - len, " %s%zu=%s:%s", BOOT_ARGS_BIND, i,
			     r->binds[i].ro ? "ro" : "rw", d);
		len += n > 0 ? (size_t)n : 0;
	}
	if (r->nbinds > SESSION_BINDS_MAX) {
		snprintf(err, errlen, "at most %d bind mounts", SESSION_BINDS_MAX);
		return -1;
	}
	if (n < 0 || len >= cap) {
		snprintf(err, errlen, "internal error: kernel command line too long");
		return -1;
	}
	return 0;
}

/* The host's files that decide what a session may do, never where its guest can reach them
 * (session/share_reach.c: through any mount of a share, a mount inside it, or a hard link). In
 * any share: the vault and its key (every secret) and the audit log, named or a private
 * broker's default directory (its own record). In a share it may write: the scope, the
 * global policy and the upstream CA bundle, which the guest would rewrite for the next
 * session that reads them (a secret's destination moved to a host of its choosing, say).
 * The cache (lib/cache_dir.h): in any share, the paused sessions (each another guest's
 * memory); in a share it may write, the templates and images every later session starts
 * from, and the KVM probe's verdicts every later session's engine is chosen by. */
static int host_files_outside(const struct session_plan *p, char *err, size_t errlen)
{
	const struct broker_opts *o = &p->req.broker;
	char key[PATH_MAX], audit_dir[PATH_MAX], root[PATH_MAX], why[PATH_MAX + 128];
	char paused[PATH_MAX], templates[PATH_MAX], images[PATH_MAX], probe[PATH_MAX], ignored[256];
	bool private_audit = o->scope && !o->shared && !o->audit &&
			     broker_audit_dir_path(audit_dir, sizeof(audit_dir)) == 0;
	const struct {
		const char *path, *name;
		bool any; /* refused in a read-only share too */
	} files[] = {
		{ o->vault, "the vault", true },
		{ o->vault && snprintf(key, sizeof(key), "%s.key", o->vault) < (int)sizeof(key)
			  ? key
			  : NULL,
		  "the vault's key", true },
		{ o->audit, "the audit log", true },
		{ private_audit ? audit_dir : NULL, "the audit log directory", true },
		{ o->scope ? p->scope_real : NULL, "the scope", false },
		{ p->req.policy, "the global policy", false },
		{ o->ca_file, "the upstream CA bundle", false },
		/* overlayfs's own work directory goes beside it */
		{ p->req.keep_changes, "--keep-changes", true },
		{ cache_dir(paused, sizeof(paused), "sessions", "the paused sessions' directory",
			    false, ignored, sizeof(ignored)) == 0
			  ? paused
			  : NULL,
		  "the paused sessions' directory", true },
		{ cache_dir(templates, sizeof(templates), "templates", "the template cache", false,
			    ignored, sizeof(ignored)) == 0
			  ? templates
			  : NULL,
		  "the template cache", false },
		{ cache_dir(images, sizeof(images), "images", "the image store", false, ignored,
			    sizeof(ignored)) == 0
			  ? images
			  : NULL,
		  "the image store", false },
		{ cache_dir(probe, sizeof(probe), "probe", "the KVM probe cache", false, ignored,
			    sizeof(ignored)) == 0
			  ? probe
			  : NULL,
		  "the KVM probe cache", false },
	};
	struct shared {
		const char *dir;
		bool ro;
	} shares[2 + SESSION_BINDS_MAX];
	size_t n = 0;
	if (p->share_origin != SHARE_NONE)
		shares[n++] = (struct shared){ p->share.dir, p->share.ro };
	for (size_t i = 0; i < p->req.nbinds && i < SESSION_BINDS_MAX; i++)
		shares[n++] = (struct shared){ p->binds[i].dir, p->binds[i].ro };
	/* An OCI bundle's root is served to the guest as it is: a share like the others. */
	if (p->req.root && realpath(p->req.root->rootfs, root))
		shares[n++] = (struct shared){ root, p->req.root_ro };
	if (!n)
		return 0;
	struct share_mounts *mounts = share_mounts_read(err, errlen);
	if (!mounts)
		return -1;
	int rc = 0;
	for (size_t f = 0; !rc && f < sizeof(files) / sizeof(files[0]); f++)
		for (size_t i = 0; !rc && files[f].path && i < n; i++) {
			if (!files[f].any && shares[i].ro)
				continue;
			int in = share_reaches(mounts, shares[i].dir, files[f].path, why,
					       sizeof(why));
			if (in == 0)
				continue;
			if (in < 0)
				snprintf(err, errlen, "%s: %s", files[f].name, why);
			else
				snprintf(err, errlen,
					 "%s (%.200s) is within reach of the %sshare %.200s, where "
					 "the guest would %s it: keep it out of %s",
					 files[f].name, files[f].path,
					 files[f].any ? "" : "writable ", shares[i].dir,
					 files[f].any ? "reach" : "rewrite",
					 files[f].any ? "every share"
						      : "the share, or share it read-only");
			rc = -1;
		}
	share_mounts_free(mounts);
	return rc;
}

int plan_template_split(const char *cmdline, char *tmpl, size_t tlen, char *args, size_t alen)
{
	size_t tl = 0, al = 0;
	tmpl[0] = args[0] = '\0';
	for (const char *w = cmdline; *w;) {
		size_t n = strcspn(w, " ");
		bool ours = strncmp(w, "bulkhead.", 9) == 0;
		/* The template's kernel is quiet whatever the session asks: once restored, init
		 * keeps the console for its frames either way. */
		bool skip = n == 5 && strncmp(w, "quiet", 5) == 0;
		char *dst = ours ? args : tmpl;
		size_t *len = ours ? &al : &tl, cap = ours ? alen : tlen;
		if (n > 0 && !skip) {
			if (*len + (*len > 0) + n >= cap)
				return -1;
			if (*len)
				dst[(*len)++] = ' ';
			memcpy(dst + *len, w, n);
			*len += n;
			dst[*len] = '\0';
		}
		w += n;
		while (*w == ' ')
			w++;
	}
	int n = snprintf(tmpl + tl, tlen - tl, "%squiet " BOOT_ARGS_TEMPLATE "1", tl ? " " : "");
	return n < 0 || (size_t)n >= tlen - tl ? -1 : 0;
}

/* --template: the kvm engine, jailed (the VMM takes the template as a descriptor); the
 * command line split into the template's and the session's own bulkhead.* words. */
static int plan_template(struct session_plan *p, char *err, size_t errlen)
{
	const struct session_request *r = &p->req;
	if (!r->template)
		return 0;
	if (p->engine.kind != ENGINE_KVM) {
		snprintf(err, errlen,
			 "--template: the %s engine cannot restore a template (the kvm engine, "
			 "bulkhead-vmm, can)",
			 engine_name(p->engine.kind));
		return -1;
	}
	if (r->no_jail || r->ram_file) {
		snprintf(err, errlen, "--template does not go with %s",
			 r->no_jail ? "--no-jail" : "--ram-file");
		return -1;
	}
	if (plan_template_split(p->cmdline, p->template_cmdline, sizeof(p->template_cmdline),
				p->template_args, sizeof(p->template_args)) < 0) {
		snprintf(err, errlen, "internal error: kernel command line too long");
		return -1;
	}
	return 0;
}

static int resolve(const struct session_request *req, struct session_plan *p, char *err,
		   size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->req = *req;
	const struct session_request *r = &p->req;
	if (r->tty && r->interactive && !isatty(0)) {
		snprintf(err, errlen, "-it needs a terminal on stdin (use -i alone for a pipe)");
		return -1;
	}
	if (plan_files(p, err, errlen) < 0)
		return -1;
	if (r->work) {
		if (share_fs_parse(r->work, &p->share, err, errlen) < 0)
			return -1;
		p->share_origin = SHARE_ASKED;
	}
	p->timeout_s = r->timeout_s;
	p->end_kind = END_TIMEOUT;
	if (plan_rules(p, err, errlen) < 0 || plan_end(p, err, errlen) < 0)
		return -1;
	p->guest_cwd = p->share_origin != SHARE_NONE ? "/work" : "/";
	p->boot_timeout_s = r->boot_timeout_s ? r->boot_timeout_s : BOOT_TIMEOUT_DEFAULT_S;
	p->mem_limit_bytes =
		(unsigned long long)(r->mem_limit_mib ? r->mem_limit_mib
						      : r->mem_mib + CGROUP_OVERHEAD_MIB)
		<< 20;
	if (engine_choose(r->engine, &p->engine) < 0) {
		snprintf(err, errlen, "engine %s: %s", engine_name(r->engine), p->engine.why);
		return -1;
	}
	/* With a broker, init installs its session CA before any command runs. */
	const char *mode = p->share_origin == SHARE_NONE ? NULL : p->share.ro ? "ro" : "rw";
	if (r->bind_later && (r->broker.scope || r->broker.shared)) {
		snprintf(err, errlen, "--bind-later takes its scope and broker when it is bound");
		return -1;
	}
	if (engine_cmdline(&p->engine, !r->verbose && !r->console_path, mode,
			   r->broker.scope != NULL || r->bind_later, p->cmdline,
			   sizeof(p->cmdline)) < 0) {
		snprintf(err, errlen, "internal error: kernel command line too long");
		return -1;
	}
	if (plan_guest_names(p, err, errlen) < 0 || host_files_outside(p, err, errlen) < 0 ||
	    plan_image(p, err, errlen) < 0 || plan_template(p, err, errlen) < 0)
		return -1;
	return plan_share(p, err, errlen);
}

int plan_resolve(const struct session_request *req, struct session_plan *p, char *err,
		 size_t errlen)
{
	int rc = resolve(req, p, err, errlen);
	if (rc < 0)
		plan_release(p);
	return rc;
}

/* A scope that asks for a work directory, or for rules inside one: the shares were given at
 * boot, so a guest booted before its scope was known cannot take it. */
static bool scope_asks_share(const struct rules *r)
{
	return r->work || r->n_work_paths || r->work_secrets || r->n_work_allow;
}

int plan_bind(const struct session_plan *p, const struct broker_opts *o, struct session_plan *bp,
	      char *err, size_t errlen)
{
	memset(bp, 0, sizeof(*bp));
	bp->req = p->req;
	bp->req.broker = *o;
	bp->share_origin = p->share_origin;
	bp->share = p->share;
	memcpy(bp->binds, p->binds, sizeof(bp->binds));
	bp->end_kind = END_TIMEOUT;
	struct rules scope;
	char why[512];
	int rc = -1;
	memset(&scope, 0, sizeof(scope));
	if (!o->scope) {
		snprintf(err, errlen, "a binding names a scope");
		return -1;
	}
	if (scope_read(bp, err, errlen) < 0)
		return -1;
	if (rules_load_json(&scope, bp->scope_text, why, sizeof(why))) {
		snprintf(err, errlen, "--scope %s: %s", o->scope, why);
		goto out;
	}
	if (scope_asks_share(&scope)) {
		snprintf(err, errlen,
			 "--scope %s: it asks for a work directory or rules inside one, which a "
			 "guest is given at boot; this guest was booted before its scope was known",
			 o->scope);
		goto out;
	}
	if (plan_scope(bp, &scope, err, errlen) < 0 || plan_policy(bp, &scope, err, errlen) < 0 ||
	    plan_end(bp, err, errlen) < 0 || host_files_outside(bp, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	rules_free(&scope);
	return rc;
}
