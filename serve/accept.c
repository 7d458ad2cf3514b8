/* SPDX-License-Identifier: Apache-2.0 */
/* serve/accept.c: our own accept loop in front of libmicrohttpd. A connection holds one of
 * the server's threads from its first byte to its last, including one that never finishes
 * its request; so each uid gets a share: a tenant (--allow-uid) at most SERVE_CONNS_TENANT
 * open at once, any other uid (refused anyway) SERVE_CONNS_STRANGER, and all such uids
 * together SERVE_CONNS_STRANGERS (however many uids one user commands through user
 * namespaces); administrators always keep SERVE_CONNS_ADMIN of SERVE_CONNS_MAX. Past its share a
 * connection is answered 503 saying so and closed, and nobody else is slowed. libmicrohttpd then
 * takes each connection (MHD_add_connection) and tells us when it closes. */
#include "serve/http_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Slots for the uids that are not administrators: every tenant (SERVE_ALLOW_MAX) and every
 * other uid (at most SERVE_CONNS_STRANGERS connections in all, so at most that many uids)
 * always find one. */
#define UIDS_MAX (SERVE_ALLOW_MAX + SERVE_CONNS_STRANGERS)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uid_t uid;
	unsigned n;
} open_by[UIDS_MAX];
static unsigned open_admin, open_others, open_strangers;
static pthread_t thread;
static int listen_fd = -1, stop_pipe[2] = { -1, -1 };
static struct MHD_Daemon *mhd;

enum kind { ADMIN, TENANT, STRANGER };

static enum kind kind_of(uid_t uid)
{
	struct serve_peer p = { .uid = uid };
	if (serve_peer_admin(&p))
		return ADMIN;
	for (size_t i = 0; i < serve.nallow; i++)
		if (serve.allow[i] == uid)
			return TENANT;
	return STRANGER;
}

/* Counts a new connection of uid; NULL, or (nothing counted) why it is refused into why.
 * Administrators always have SERVE_CONNS_ADMIN of the SERVE_CONNS_MAX to themselves. */
static const char *take(uid_t uid, char *why, size_t whylen)
{
	enum kind k = kind_of(uid);
	pthread_mutex_lock(&lock);
	const char *refused = NULL;
	if (k == ADMIN) {
		bool ok = open_admin + open_others < SERVE_CONNS_MAX;
		if (ok)
			open_admin++;
		else
			snprintf(why, whylen, "%u connections are open, the most at once",
				 SERVE_CONNS_MAX);
		pthread_mutex_unlock(&lock);
		return ok ? NULL : why;
	}
	size_t i = 0, free_slot = UIDS_MAX;
	for (; i < UIDS_MAX; i++) {
		if (open_by[i].n && open_by[i].uid == uid)
			break;
		if (!open_by[i].n && free_slot == UIDS_MAX)
			free_slot = i;
	}
	if (i == UIDS_MAX)
		i = free_slot;
	unsigned share = k == TENANT ? SERVE_CONNS_TENANT : SERVE_CONNS_STRANGER;
	if (k == STRANGER && open_strangers >= SERVE_CONNS_STRANGERS)
		refused = "uids that may not use this daemon hold all the connections they may";
	else if (i == UIDS_MAX || open_others >= SERVE_CONNS_MAX - SERVE_CONNS_ADMIN)
		refused =
			"the connections for uids other than root's and the daemon's are all open";
	else if (open_by[i].n >= share)
		refused = "";
	if (refused) {
		if (!*refused)
			snprintf(why, whylen, "uid %u has %u connections open, its most at once",
				 (unsigned)uid, share);
		else
			snprintf(why, whylen, "%s", refused);
		pthread_mutex_unlock(&lock);
		return why;
	}
	open_by[i].uid = uid;
	open_by[i].n++;
	open_others++;
	open_strangers += k == STRANGER;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void give_back(uid_t uid)
{
	enum kind k = kind_of(uid);
	pthread_mutex_lock(&lock);
	if (k == ADMIN) {
		open_admin--;
	} else {
		for (size_t i = 0; i < UIDS_MAX; i++)
			if (open_by[i].n && open_by[i].uid == uid) {
				open_by[i].n--;
				open_others--;
				open_strangers -= k == STRANGER;
				break;
			}
	}
	pthread_mutex_unlock(&lock);
}

/* libmicrohttpd's word on each connection: at its close, its uid's count goes down. */
static void notify(void *cls, struct MHD_Connection *c, void **ctx,
		   enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	(void)c;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED && *ctx) {
		give_back((uid_t)((uintptr_t)*ctx - 1));
		*ctx = NULL;
	} else if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct ucred cr;
		socklen_t len = sizeof(cr);
		if (ci && getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
			*ctx = (void *)((uintptr_t)cr.uid + 1);
	}
}

static void refuse(int fd, const char *why)
{
	char body[256], msg[512];
	int b = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", why);
	int n = snprintf(msg, sizeof(msg),
			 "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
			 "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
			 b, body);
	/* Non-blocking: a peer that does not read gets nothing, and never holds us. */
	if (send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* nothing to do: it is closed either way */
	}
	close(fd);
}
static void *accept_loop(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = listen_fd, .events = POLLIN },
				       { .fd = stop_pipe[0], .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		struct sockaddr_un addr;
		socklen_t alen = sizeof(addr);
		int fd = accept4(listen_fd, (struct sockaddr *)&addr, &alen,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			continue; /* EMFILE and the like: the next poll tries again */
		struct ucred cr;
		socklen_t len = sizeof(cr);
		char why[160];
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
			close(fd);
			continue;
		}
		if (take(cr.uid, why, sizeof(why))) {
			fprintf(stderr, "bulkhead serve: a connection of uid %u refused: %s\n",
				(unsigned)cr.uid, why);
			refuse(fd, why);
			continue;
		}
		if (MHD_add_connection(mhd, fd, (struct sockaddr *)&addr, alen) != MHD_YES)
			give_back(cr.uid); /* it closed fd */
	}
	return NULL;
}

int serve_accept_start(struct MHD_Daemon *d, int lfd)
{
	mhd = d;
	listen_fd = lfd;
	if (pipe2(stop_pipe, O_CLOEXEC) < 0)
		return -1;
	int rc = pthread_create(&thread, NULL, accept_loop, NULL);
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

void serve_accept_stop(void)
{
	if (stop_pipe[1] < 0)
		return;
	if (write(stop_pipe[1], "x", 1) == 1)
		pthread_join(thread, NULL);
	close(stop_pipe[1]);
	stop_pipe[1] = -1;
}

MHD_NotifyConnectionCallback serve_accept_notify(void)
{
	return notify;
}
