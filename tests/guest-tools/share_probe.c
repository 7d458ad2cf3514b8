/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guest-tools/share_probe.c: one file-system call in the guest, its result on stdout as
 * "ok ..." or the errno's name (EROFS, ENOENT, ...), for tests/e2e/test_share_rules.sh, which
 * copies it into the work share. Each call is made directly, as a hostile program would, with
 * no library in between that might retry or fall back (mv's copy after EXDEV, say).
 *   open-w P | create P | open-r P (its bytes counted) | opath P | stat P (a file's size)
 *   readdir P
 *   rename A B | link A B | symlink TARGET P | unlink P | mkdir P | rmdir P | chmod P
 *   truncate P | setxattr P | utimes P | mkfifo P
 *   held DIR FROM TO NAME: DIR opened, FROM renamed to TO, then NAME opened through the held
 *   descriptor and through /proc/self/fd/N/NAME (each result printed) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char *name(int e)
{
	static const struct {
		int e;
		const char *n;
	} t[] = { { EROFS, "EROFS" },	{ ENOENT, "ENOENT" },	{ EXDEV, "EXDEV" },
		  { EBUSY, "EBUSY" },	{ EPERM, "EPERM" },	{ EACCES, "EACCES" },
		  { EEXIST, "EEXIST" }, { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
		  { ENOTSUP, "ENOTSUP" }, { ENOTEMPTY, "ENOTEMPTY" }, { EINVAL, "EINVAL" },
		  { ENOSYS, "ENOSYS" },	{ ELOOP, "ELOOP" },	{ ENODATA, "ENODATA" } };
	static char buf[16];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == e)
			return t[i].n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

static int result(int rc)
{
	if (rc < 0)
		printf("%s\n", name(errno));
	else
		printf("ok\n");
	return 0;
}

static int opened(int fd, int count)
{
	char buf[4096];
	long n = 0;
	ssize_t r;

	if (fd < 0)
		return result(-1);
	while (count && (r = read(fd, buf, sizeof(buf))) > 0)
		n += r;
	close(fd);
	if (count)
		printf("ok %ld bytes\n", n);
	else
		printf("ok\n");
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list(const char *p)
{
	DIR *d = opendir(p);
	struct dirent *e;
	char *names[256];
	size_t n = 0;

	if (!d)
		return result(-1);
	while ((e = readdir(d)) && n < 256)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), cmp);
	printf("ok");
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? "," : " ", names[i]);
	printf("\n");
	return 0;
}

static int held(char **a)
{
	int fd = open(a[0], O_RDONLY | O_DIRECTORY);
	char proc[64], path[4200];

	if (fd < 0)
		return result(-1);
	printf("rename ");
	result(rename(a[1], a[2]));
	printf("openat ");
	opened(openat(fd, a[3], O_RDONLY), 1);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	snprintf(path, sizeof(path), "%s/%s", proc, a[3]);
	printf("proc ");
	opened(open(path, O_RDONLY), 1);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";
	char **a = argv + 2;
	int n = argc - 2;
	struct stat st;

	if (n == 1 && !strcmp(op, "open-w"))
		return opened(open(a[0], O_WRONLY), 0);
	if (n == 1 && !strcmp(op, "create"))
		return opened(open(a[0], O_WRONLY | O_CREAT | O_EXCL, 0644), 0);
	if (n == 1 && !strcmp(op, "open-r"))
		return opened(open(a[0], O_RDONLY), 1);
	if (n == 1 && !strcmp(op, "opath"))
		return opened(open(a[0], O_PATH), 0);
	if (n == 1 && !strcmp(op, "stat")) {
		if (lstat(a[0], &st) < 0)
			return result(-1);
		if (S_ISDIR(st.st_mode))
			printf("ok dir\n");
		else
			printf("ok file %lld\n", (long long)st.st_size);
		return 0;
	}
	if (n == 1 && !strcmp(op, "readdir"))
		return list(a[0]);
	if (n == 2 && !strcmp(op, "rename"))
		return result(rename(a[0], a[1]));
	if (n == 2 && !strcmp(op, "link"))
		return result(link(a[0], a[1]));
	if (n == 2 && !strcmp(op, "symlink"))
		return result(symlink(a[0], a[1]));
	if (n == 1 && !strcmp(op, "unlink"))
		return result(unlink(a[0]));
	if (n == 1 && !strcmp(op, "mkdir"))
		return result(mkdir(a[0], 0755));
	if (n == 1 && !strcmp(op, "rmdir"))
		return result(rmdir(a[0]));
	if (n == 1 && !strcmp(op, "chmod"))
		return result(chmod(a[0], 0600));
	if (n == 1 && !strcmp(op, "truncate"))
		return result(truncate(a[0], 0));
	if (n == 1 && !strcmp(op, "setxattr"))
		return result(setxattr(a[0], "user.probe", "x", 1, 0));
	if (n == 1 && !strcmp(op, "utimes"))
		return result(utimensat(AT_FDCWD, a[0], NULL, 0));
	if (n == 1 && !strcmp(op, "mkfifo"))
		return result(mkfifo(a[0], 0644));
	if (n == 4 && !strcmp(op, "held"))
		return held(a);
	fprintf(stderr, "share-probe: unknown call or wrong arguments\n");
	return 2;
}
