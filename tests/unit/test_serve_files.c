/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_serve_files.c: files and tar streams under a work directory a guest has made
 * hostile (serve/files.c, serve/archive.c): links out of it, "..", FIFOs and devices, set-ID
 * modes, archives naming ../ or /; what is written belongs to the work directory's owner; a
 * failed upload leaves the old file; trees are removed without following links. Downloads are
 * fetched through a real libmicrohttpd daemon. */
#include "serve/files.h"
#include "lib/tree_remove.h"
#include "serve/files_internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define OWNER 4321 /* the work directory's owner when we are root */

static char top[64], work[96], state[96], outside[96];
static char why[256];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **st)
{
	(void)st;
	snprintf(top, sizeof(top), "/tmp/test_serve_files.XXXXXX");
	if (!mkdtemp(top))
		return -1;
	snprintf(work, sizeof(work), "%s/work", top);
	snprintf(state, sizeof(state), "%s/state", top);
	snprintf(outside, sizeof(outside), "%s/outside", top);
	sh("mkdir %s %s %s && echo secret > %s/secret", work, state, outside, outside);
	if (geteuid() == 0)
		sh("chown %d:%d %s", OWNER, OWNER, work);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	sh("chmod -R u+rwx %s; rm -rf %s", top, top);
	return 0;
}

/* The file under the work directory as a string ("" if absent). */
static const char *slurp(const char *rel)
{
	static char buf[4096];
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", work, rel);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

static int exists(const char *rel)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", work, rel);
	return lstat(path, &st) == 0;
}

/* A whole upload, its body fed in pieces of 7 bytes. Its result; *size on success. */
static enum serve_err put(const char *rel, bool archive, mode_t mode, const char *body, size_t len,
			  unsigned long long *size)
{
	enum serve_err status = SERVE_OK;
	struct serve_upload *u =
		serve_upload_start(work, rel, archive, mode, state, &status, why, sizeof(why));
	if (!u) {
		assert_int_not_equal(status, 0);
		return status;
	}
	for (size_t at = 0; at < len; at += 7) {
		status = serve_upload_feed(u, body + at, len - at < 7 ? len - at : 7, why,
					   sizeof(why));
		if (status) {
			serve_upload_finish(u, false, NULL, why, sizeof(why));
			return status;
		}
	}
	unsigned long long n = 0;
	status = serve_upload_finish(u, true, &n, why, sizeof(why));
	if (size)
		*size = n;
	return status;
}

static enum serve_err put_file(const char *rel, const char *body)
{
	return put(rel, false, 0644, body, strlen(body), NULL);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *size, void **ctx)
{
	(void)url, (void)method, (void)version, (void)data, (void)size, (void)ctx;
	return MHD_queue_response(c, MHD_HTTP_OK, cls);
}

/* A file body (taken) as a real daemon sends it, made as serve/http.c makes it; its length. */
static size_t fetch(const struct serve_body *b, char *buf, size_t cap)
{
	assert_true(b->fd >= 0);
	struct MHD_Response *r = MHD_create_response_from_fd(b->size, b->fd);
	assert_non_null(r);
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
						answer, r, MHD_OPTION_END);
	assert_non_null(d);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(info->port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	const char req[] = "GET / HTTP/1.0\r\n\r\n";
	assert_int_equal(write(s, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	size_t n = 0;
	for (ssize_t got; n < cap && (got = read(s, buf + n, cap - n)) > 0;)
		n += (size_t)got;
	close(s);
	MHD_stop_daemon(d);
	MHD_destroy_response(r);
	char *body = memmem(buf, n, "\r\n\r\n", 4);
	assert_non_null(body);
	body += 4;
	n -= (size_t)(body - buf);
	memmove(buf, body, n);
	return n;
}

static enum serve_err get_status(const char *rel)
{
	struct serve_body b;
	enum serve_err status = serve_file_body(work, rel, &b, why, sizeof(why));
	if (status == SERVE_OK)
		close(b.fd);
	return status;
}

static void assert_owned(const char *rel, mode_t perm)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", work, rel);
	assert_int_equal(lstat(path, &st), 0);
	if (perm != (mode_t)-1)
		assert_int_equal(st.st_mode & 07777, perm);
	if (geteuid() == 0) {
		assert_int_equal(st.st_uid, OWNER);
		assert_int_equal(st.st_gid, OWNER);
	}
}

/* No temporary file is left in the directory after an upload, done or not. */
static void assert_no_tmp(const char *dir)
{
	sh("! ls -A %s/%s | grep -q '^\\.bulkhead-'", work, dir);
}

static void test_put_get(void **st)
{
	(void)st;
	char buf[8192];
	unsigned long long size = 0;
	sh("mkdir -p %s/sub", work);
	assert_int_equal(put("sub/a.txt", false, 0750, "hello, file\n", 12, &size), 0);
	assert_int_equal(size, 12);
	assert_string_equal(slurp("sub/a.txt"), "hello, file\n");
	assert_owned("sub/a.txt", 0750);
	assert_no_tmp("sub");

	struct serve_body b;
	assert_int_equal(serve_file_body(work, "sub/a.txt", &b, why, sizeof(why)), SERVE_OK);
	size_t n = fetch(&b, buf, sizeof(buf));
	assert_int_equal(n, 12);
	assert_memory_equal(buf, "hello, file\n", 12);
	assert_int_equal(serve_file_body(work, "./sub//a.txt", &b, why, sizeof(why)), SERVE_OK);
	assert_int_equal(b.size, 12);
	close(b.fd);

	/* replaced whole; an empty body is an empty file */
	assert_int_equal(put_file("sub/a.txt", "v2"), 0);
	assert_string_equal(slurp("sub/a.txt"), "v2");
	assert_int_equal(put_file("empty", ""), 0);
	assert_int_equal(serve_file_body(work, "empty", &b, why, sizeof(why)), SERVE_OK);
	assert_int_equal(fetch(&b, buf, sizeof(buf)), 0);
}

/* An upload abandoned halfway leaves the old file as it was, and no temporary file. */
static void test_abandoned_upload_keeps_old(void **st)
{
	(void)st;
	assert_int_equal(put_file("keep", "old"), 0);
	enum serve_err status = SERVE_OK;
	struct serve_upload *u =
		serve_upload_start(work, "keep", false, 0644, state, &status, why, sizeof(why));
	assert_non_null(u);
	assert_int_equal(serve_upload_feed(u, "new and half", 12, why, sizeof(why)), 0);
	serve_upload_finish(u, false, NULL, why, sizeof(why));
	assert_string_equal(slurp("keep"), "old");
	assert_no_tmp("");
}

static void test_bad_paths(void **st)
{
	(void)st;
	char longp[PATH_MAX + 8];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	sh("mkdir -p %s/dir", work);
	const char *bad[] = { "",
			      ".",
			      "..",
			      "dir/",
			      "dir/.",
			      "dir/..",
			      "/etc/passwd",
			      "../outside/secret",
			      "dir/../../outside/secret",
			      longp };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(get_status(bad[i]), SERVE_E_INVALID);
		assert_int_equal(put_file(bad[i], "x"), SERVE_E_INVALID);
		assert_null(strchr(why, '\n'));
	}
	assert_int_equal(get_status("missing"), SERVE_E_NOT_FOUND);
	assert_int_equal(put_file("nodir/x", "x"), SERVE_E_NOT_FOUND);
	assert_int_equal(get_status("dir"), SERVE_E_CONFLICT);
	assert_int_equal(put_file("dir", "x"), SERVE_E_CONFLICT);
	assert_int_equal(put("f", false, 04755, "x", 1, NULL), SERVE_E_INVALID); /* set-user-ID */
	assert_int_equal(put("f", false, 02755, "x", 1, NULL), SERVE_E_INVALID); /* set-group-ID */
	assert_false(exists("f"));
	/* sticky: dropped, not refused */
	assert_int_equal(put("f", false, 01755, "x", 1, NULL), 0);
	assert_owned("f", 0755);
	/* a name with a newline is shown on one line */
	assert_int_equal(get_status("new\nline"), SERVE_E_NOT_FOUND);
	assert_null(strchr(why, '\n'));
}

/* Links the guest made lead nowhere outside, for reading or writing; a FIFO never blocks a
 * download, a device is never opened. */
static void test_hostile_tree(void **st)
{
	(void)st;
	sh("cd %s && ln -s / root && ln -s %s out && ln -s ../outside/secret up && "
	   "ln -s %s/secret abs && mkdir in && echo inside > in/f && ln -s in/f rel && "
	   "mkfifo fifo",
	   work, outside, outside);
	assert_int_equal(get_status("root/etc/passwd"), SERVE_E_INVALID);
	assert_int_equal(get_status("out/secret"), SERVE_E_INVALID);
	assert_int_equal(get_status("up"), SERVE_E_INVALID);
	assert_int_equal(get_status("abs"), SERVE_E_INVALID);
	assert_int_equal(get_status("rel"), 0); /* a link inside the tree is fine */
	assert_int_equal(get_status("fifo"), SERVE_E_CONFLICT);
	assert_int_equal(put_file("out/new", "x"), SERVE_E_INVALID);
	assert_int_equal(put_file("root/tmp/new", "x"), SERVE_E_INVALID);
	/* Writing over a link replaces the link: the file it names is untouched. */
	assert_int_equal(put_file("abs", "overwritten"), 0);
	sh("test \"$(cat %s/secret)\" = secret && test -f %s/abs && ! test -L %s/abs", outside,
	   work, work);
	assert_int_equal(put_file("fifo", "now a file"), 0);
	assert_string_equal(slurp("fifo"), "now a file");
	if (geteuid() == 0) {
		sh("mknod %s/null c 1 3", work);
		assert_int_equal(get_status("null"), SERVE_E_CONFLICT);
	}
}

/* A tar stream built in memory from lines "TYPE NAME [TEXT]": d directory, f file with TEXT,
 * s set-uid file, l link to TEXT, h hard link to TEXT, p FIFO, c device. Its length. */
static size_t make_tar(char *buf, size_t cap, const char *const *lines, size_t n)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	size_t used = 0;
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	assert_int_equal(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		char type, name[256], text[256] = "";
		assert_true(sscanf(lines[i], "%c %255s %255s", &type, name, text) >= 2);
		archive_entry_clear(e);
		archive_entry_set_pathname(e, name);
		archive_entry_set_perm(e, type == 's' ? 04755 : 0640);
		archive_entry_set_filetype(e, type == 'd'   ? AE_IFDIR
					      : type == 'l' ? AE_IFLNK
					      : type == 'p' ? AE_IFIFO
					      : type == 'c' ? AE_IFCHR
							    : AE_IFREG);
		if (type == 'l')
			archive_entry_set_symlink(e, text);
		if (type == 'h')
			archive_entry_set_hardlink(e, text);
		bool data = type == 'f' || type == 's';
		archive_entry_set_size(e, data ? (la_int64_t)strlen(text) : 0);
		assert_true(archive_write_header(a, e) >= ARCHIVE_WARN);
		if (data)
			assert_int_equal(archive_write_data(a, text, strlen(text)),
					 (la_ssize_t)strlen(text));
	}
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	archive_entry_free(e);
	return used;
}

static enum serve_err put_tar(const char *dir, const char *const *lines, size_t n,
			      unsigned long long *entries)
{
	static char buf[1 << 20];
	size_t len = make_tar(buf, sizeof(buf), lines, n);
	return put(dir, true, 0, buf, len, entries);
}

static void test_archive_upload(void **st)
{
	(void)st;
	const char *const good[] = { "d ./",
				     "d ./pkg/",
				     "f ./pkg/a.txt A",
				     "f pkg/deep/er/b.txt B",
				     "s pkg/suid.sh S",
				     "l pkg/link ../pkg/a.txt",
				     "l pkg/abs /etc/passwd",
				     "d pkg//x/./y/" };
	unsigned long long n = 0;
	sh("mkdir -p %s/into", work);
	assert_int_equal(put_tar("into", good, 8, &n), 0);
	assert_int_equal(n, 8);
	assert_string_equal(slurp("into/pkg/a.txt"), "A");
	assert_string_equal(slurp("into/pkg/deep/er/b.txt"), "B");
	assert_owned("into/pkg/a.txt", 0640);
	assert_owned("into/pkg/deep", 0755);	/* made on the way */
	assert_owned("into/pkg/suid.sh", 0755); /* set-ID bits dropped */
	assert_owned("into/pkg/x/y", 0740);	/* a directory stays its owner's to fill */
	assert_owned("into/pkg/link", (mode_t)-1);
	sh("test \"$(readlink %s/into/pkg/abs)\" = /etc/passwd", work);
	assert_int_equal(get_status("into/pkg/abs"),
			 SERVE_E_INVALID); /* stored as is, never followed */
	assert_no_tmp("into/pkg");

	assert_int_equal(put("", true, 0, "", 0, &n), 0); /* empty body: nothing */
	assert_int_equal(n, 0);
	assert_int_equal(put("", true, 0, "not a tar stream at all, surely", 31, NULL),
			 SERVE_E_INVALID);
	assert_int_equal(put_tar("missing", good, 1, NULL), SERVE_E_NOT_FOUND);
	assert_int_equal(put_tar("into/pkg/a.txt", good, 1, NULL), SERVE_E_CONFLICT);
	sh("ln -s %s %s/outlink", outside, work);
	assert_int_equal(put_tar("outlink", good, 1, NULL), SERVE_E_INVALID);
}

/* Each refused entry is named, not made; entries before it stay. */
static void test_archive_refused(void **st)
{
	(void)st;
	struct {
		const char *line, *named;
		enum serve_err status;
	} bad[] = {
		{ "f ../evil E", "../evil", SERVE_E_INVALID },
		{ "f a/../../evil E", "a/../../evil", SERVE_E_INVALID },
		{ "f a/../inside E", "a/../inside",
		  SERVE_E_INVALID }, /* ".." even where it stays inside */
		{ "f /abs E", "/abs", SERVE_E_INVALID },
		{ "h hard pkg/a.txt", "hard", SERVE_E_INVALID },
		{ "p fifo", "fifo", SERVE_E_INVALID },
		{ "c dev", "dev", SERVE_E_INVALID },
		{ "f lnk/escaped E", "lnk/escaped", SERVE_E_INVALID }, /* through a link out */
		{ "d file", "file", SERVE_E_CONFLICT },
	};
	sh("mkdir -p %s/t && ln -s %s %s/t/lnk && echo f > %s/t/file", work, outside, work, work);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *lines[] = { "f before.txt ok", bad[i].line, "f after.txt no" };
		sh("rm -f %s/t/before.txt", work);
		assert_int_equal(put_tar("t", lines, 3, NULL), bad[i].status);
		assert_non_null(strstr(why, bad[i].named));
		assert_true(exists("t/before.txt"));
		assert_false(exists("t/after.txt"));
	}
	assert_false(exists("evil"));
	assert_false(exists("t/hard"));
	assert_false(exists("t/fifo"));
	assert_false(exists("t/dev"));
	assert_false(exists("t/inside"));
	sh("test ! -e %s/evil && test ! -e /abs && test ! -e %s/escaped", top, outside);
}

/* More entries than the bound: 413, found without unpacking them all first. */
static void test_archive_too_many(void **st)
{
	(void)st;
	static char one[4096];
	const char *const lines[] = { "d ./" };
	size_t len = make_tar(one, sizeof(one), lines, 1); /* a header, then the end */
	assert_int_equal(len, 3 * 512);
	enum serve_err status = SERVE_OK;
	struct serve_upload *u =
		serve_upload_start(work, "", true, 0, state, &status, why, sizeof(why));
	assert_non_null(u);
	for (int i = 0; i <= 100000; i++)
		assert_int_equal(serve_upload_feed(u, one, 512, why, sizeof(why)), 0);
	assert_int_equal(serve_upload_feed(u, one + 512, 1024, why, sizeof(why)), 0);
	unsigned long long n = 0;
	assert_int_equal(serve_upload_finish(u, true, &n, why, sizeof(why)), SERVE_E_TOO_LARGE);
	assert_non_null(strstr(why, "100000"));
}

/* The archive's entries as "TYPE NAME[ -> LINK][ = DATA]" lines. */
static void list_tar(int fd, char *out, size_t cap)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	size_t n = 0;
	archive_read_support_format_tar(a);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(archive_read_open_fd(a, fd, 4096), ARCHIVE_OK);
	out[0] = 0;
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		unsigned t = archive_entry_filetype(e);
		char data[64] = "";
		la_ssize_t got = archive_read_data(a, data, sizeof(data) - 1);
		n += (size_t)snprintf(out + n, cap - n, "%c %s%s%s%s%s\n",
				      t == AE_IFDIR   ? 'd'
				      : t == AE_IFLNK ? 'l'
						      : 'f',
				      archive_entry_pathname(e), t == AE_IFLNK ? " -> " : "",
				      t == AE_IFLNK ? archive_entry_symlink(e) : "",
				      got > 0 ? " = " : "", got > 0 ? data : "");
	}
	archive_read_free(a);
}

static enum serve_err pack(const char *rel, char *list, size_t cap)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", work, rel);
	int dfd = open(path, O_RDONLY | O_DIRECTORY);
	int out = files_spool(state);
	assert_true(dfd >= 0 && out >= 0);
	enum serve_err status = serve_archive_pack(dfd, out, why, sizeof(why));
	if (!status)
		list_tar(out, list, cap);
	close(out);
	return status;
}

static void test_archive_download(void **st)
{
	(void)st;
	char list[4096], buf[65536];
	sh("mkdir -p %s/p/sub && cd %s/p && echo one > sub/one && ln -s / root && "
	   "ln -s ../../outside/secret up && mkfifo fifo && chmod 4755 sub/one",
	   work, work);
	if (geteuid() == 0)
		sh("mknod %s/p/null c 1 3", work);
	assert_int_equal(pack("p", list, sizeof(list)), 0);
	assert_non_null(strstr(list, "d sub/\n"));
	assert_non_null(strstr(list, "f sub/one = one\n"));
	assert_non_null(strstr(list, "l root -> /\n"));
	assert_non_null(strstr(list, "l up -> ../../outside/secret\n"));
	assert_null(strstr(list, "fifo"));
	assert_null(strstr(list, "null"));
	assert_null(strstr(list, "= secret")); /* no file behind a link was read */

	/* the same through the API and a daemon */
	struct serve_body b;
	assert_int_equal(serve_archive_body(work, "p", state, &b, why, sizeof(why)), SERVE_OK);
	size_t n = fetch(&b, buf, sizeof(buf));
	assert_true(n > 0 && n % 512 == 0);
	int fd = files_spool(state);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	char again[4096];
	list_tar(fd, again, sizeof(again));
	close(fd);
	assert_string_equal(again, list);

	assert_int_equal(serve_archive_body(work, "p/root", state, &b, why, sizeof(why)),
			 SERVE_E_INVALID);
	assert_int_equal(serve_archive_body(work, "p/sub/one", state, &b, why, sizeof(why)),
			 SERVE_E_CONFLICT);
	assert_int_equal(serve_archive_body(work, "nope", state, &b, why, sizeof(why)),
			 SERVE_E_NOT_FOUND);
	assert_int_equal(serve_archive_body(work, "", state, &b, why, sizeof(why)), SERVE_OK);
	close(b.fd);

	if (geteuid() == 0) { /* a mount point is not entered */
		char mnt[PATH_MAX];
		snprintf(mnt, sizeof(mnt), "%s/p/mnt", work);
		sh("mkdir %s", mnt);
		assert_int_equal(mount(outside, mnt, NULL, MS_BIND, NULL), 0);
		enum serve_err status = pack("p", list, sizeof(list));
		umount2(mnt, MNT_DETACH);
		assert_int_equal(status, 0);
		assert_null(strstr(list, "mnt"));
	}

	/* deeper than the bound: refused whole, not cut */
	sh("mkdir -p %s/deep && cd %s/deep && for i in $(seq 65); do mkdir d && cd d; done", work,
	   work);
	assert_int_equal(pack("deep", list, sizeof(list)), SERVE_E_TOO_LARGE);
}

static void test_tree_remove(void **st)
{
	(void)st;
	char path[PATH_MAX], err[PATH_MAX + 128];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/gone", top);
	sh("mkdir -p %s/a/ro && cd %s && ln -s %s out && ln -s / root && mkfifo a/fifo && "
	   "touch a/ro/f && chmod 555 a/ro && d=deep && mkdir $d && "
	   "for i in $(seq 300); do d=$d/d; mkdir $d; done && ln -s %s $d/out",
	   path, path, outside, outside);
	assert_int_equal(tree_remove(AT_FDCWD, path, err, sizeof(err)), 0);
	assert_int_equal(lstat(path, &sb), -1);
	assert_int_equal(lstat(outside, &sb), 0);
	sh("test \"$(cat %s/secret)\" = secret", outside);
	assert_int_equal(tree_remove(AT_FDCWD, path, err, sizeof(err)), 0); /* gone: fine */

	if (geteuid() != 0)
		return; /* the rest needs a mount */
	sh("mkdir -p %s/m/mnt && echo x > %s/m/file", path, path);
	snprintf(path, sizeof(path), "%s/gone/m/mnt", top);
	assert_int_equal(mount(outside, path, NULL, MS_BIND, NULL), 0);
	snprintf(path, sizeof(path), "%s/gone", top);
	/* refused at the mount, never crossing it */
	assert_int_equal(tree_remove(AT_FDCWD, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mounted"));
	snprintf(path, sizeof(path), "%s/gone/m/mnt", top);
	umount2(path, MNT_DETACH);
	sh("test \"$(cat %s/secret)\" = secret && test ! -e %s/gone/m/file", outside, top);
}

/* The guest swaps names while we work: a directory with a link out of the tree, a regular file
 * with a FIFO. No write lands outside, no download blocks on the FIFO (an alarm would end the
 * test), every answer is one of the expected statuses. */
static atomic_bool racing;

static void *swapper(void *arg)
{
	int wfd = *(int *)arg;
	while (atomic_load(&racing)) {
		renameat2(wfd, "d", wfd, "d-out", RENAME_EXCHANGE);
		renameat2(wfd, "reg", wfd, "fifo", RENAME_EXCHANGE);
	}
	return NULL;
}

static void test_races(void **st)
{
	(void)st;
	char path[PATH_MAX];
	sh("mkdir %s/race && cd %s/race && mkdir d && ln -s %s d-out && echo r > reg && mkfifo "
	   "fifo",
	   work, work, outside);
	snprintf(path, sizeof(path), "%s/race", work);
	int wfd = open(path, O_PATH | O_DIRECTORY);
	pthread_t t;
	atomic_store(&racing, true);
	assert_int_equal(pthread_create(&t, NULL, swapper, &wfd), 0);
	alarm(60);
	int ok_put = 0, ok_get = 0;
	for (int i = 0; i < 3000; i++) {
		enum serve_err s = put_file("race/d/f", "x");
		assert_true(s == 0 || s == SERVE_E_INVALID);
		ok_put += s == 0;
		s = get_status("race/reg");
		assert_true(s == 0 || s == SERVE_E_CONFLICT);
		ok_get += s == 0;
		s = get_status("race/d/f");
		assert_true(s == 0 || s == SERVE_E_INVALID || s == SERVE_E_NOT_FOUND);
	}
	alarm(0);
	atomic_store(&racing, false);
	pthread_join(t, NULL);
	close(wfd);
	snprintf(path, sizeof(path), "%s/f", outside);
	assert_int_equal(access(path, F_OK), -1);
	print_message("# uploads done %d, downloads done %d of 3000\n", ok_put, ok_get);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_abandoned_upload_keeps_old),
		cmocka_unit_test(test_bad_paths),
		cmocka_unit_test(test_hostile_tree),
		cmocka_unit_test(test_archive_upload),
		cmocka_unit_test(test_archive_refused),
		cmocka_unit_test(test_archive_too_many),
		cmocka_unit_test(test_archive_download),
		cmocka_unit_test(test_races),
		cmocka_unit_test(test_tree_remove),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
