/* SPDX-License-Identifier: Apache-2.0 */
/* serve/peer.c: who is asking. Root and the daemon's own uid are the host's administrators
 * and may do anything the daemon may; a uid let in with --allow-uid is a tenant: it sees and
 * drives only the sessions it created, and every host path it names (work directory, scope,
 * vault, CA file, audit log, shared broker) must be one that uid itself could open that way,
 * checked by a child process running as that uid, so the daemon's own rights (root's) never
 * stand in for the client's. */
#include "serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define GROUPS_MAX 256

bool serve_peer_admin(const struct serve_peer *p)
{
	return p->uid == 0 || p->uid == geteuid();
}

bool serve_peer_owns(const struct serve_peer *p, const struct serve_session *s)
{
	return serve_peer_admin(p) || s->owner_uid == p->uid;
}

/* In the child, as the peer: may it open path as asked? 0 or an errno. */
static int try_path(const char *path, char kind)
{
	int fd;
	switch (kind) {
	case 'r': /* a file it reads */
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		break;
	case 'd': /* a directory it reads */
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		break;
	case 'D': /* a directory it writes */
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
			close(fd);
			return errno;
		}
		break;
	case 'w': /* a file it appends to, or may create */
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
			  0600);
		break;
	case 's': { /* a socket it may connect to */
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		if (strlen(path) >= sizeof(a.sun_path))
			return ENAMETOOLONG;
		strcpy(a.sun_path, path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			int e = errno;
			close(fd);
			return e;
		}
		break;
	}
	default:
		return EINVAL;
	}
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

int serve_peer_check(const struct serve_peer *p, const char *const paths[], const char *kinds,
		     char *why, size_t whylen)
{
	if (serve_peer_admin(p))
		return 0;
	gid_t groups[GROUPS_MAX];
	int ngroups = GROUPS_MAX;
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096];
	if (getpwuid_r(p->uid, &pw, pwbuf, sizeof(pwbuf), &pwp) != 0 || !pwp ||
	    getgrouplist(pw.pw_name, p->gid, groups, &ngroups) < 0)
		ngroups = 0; /* a uid without a name: its own group alone */
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "cannot check paths: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* One thread here: only system calls until _exit. */
		int res[2] = { 0, -1 };
		if (setgroups((size_t)ngroups, groups) < 0 ||
		    setresgid(p->gid, p->gid, p->gid) < 0 || setresuid(p->uid, p->uid, p->uid) < 0)
			res[0] = EPERM;
		for (int i = 0; !res[0] && paths[i]; i++)
			if ((res[0] = try_path(paths[i], kinds[i])) != 0)
				res[1] = i;
		if (write(fds[1], res, sizeof(res)) != (ssize_t)sizeof(res))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	int res[2] = { EIO, -1 };
	if (pid < 0 || read(fds[0], res, sizeof(res)) != (ssize_t)sizeof(res))
		res[0] = pid < 0 ? errno : EIO;
	close(fds[0]);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	if (!res[0])
		return 0;
	if (res[1] >= 0)
		snprintf(why, whylen, "%s: not for uid %u: %s", paths[res[1]], (unsigned)p->uid,
			 strerror(res[0]));
	else
		snprintf(why, whylen, "cannot act as uid %u to check paths: %s", (unsigned)p->uid,
			 strerror(res[0]));
	return -1;
}
