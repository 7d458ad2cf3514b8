/* SPDX-License-Identifier: Apache-2.0 */
/* guest/init/proxy_ca.c: trust the session CA, and nothing else. The broker terminates the
 * guest's TLS (CONNECT) with leaves from its per-session CA; bulkhead-init asks the broker
 * for that CA's certificate at start-up and writes it as the system bundle, before any
 * command runs. The file is public: the CA's key never leaves the broker. */
#include "guest/init/init.h"
#include "lib/agent_proto.h"
#include "lib/boot_args.h"
#include "lib/io.h"

#include <errno.h>
#include <sys/mount.h>
#include <fcntl.h>
#include <sys/socket.h> /* before vm_sockets.h: older kernel headers need sockaddr */
#include <linux/vm_sockets.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define CA_MAX 16384 /* a certificate, with room to spare; a longer answer is refused */

static int fetch(char *buf, size_t cap, size_t *len)
{
	static const char req[] = "GET " BROKER_CA_PATH " HTTP/1.1\r\nHost: bulkhead-broker\r\n"
				  "Connection: close\r\n\r\n";
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
				  .svm_cid = VMADDR_CID_HOST,
				  .svm_port = BROKER_VSOCK_PORT };
	struct timeval tv = { .tv_sec = 10 };
	int s = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(s, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
		int e = errno;
		close(s);
		return -e;
	}
	ssize_t n = io_read_full(s, buf, cap);
	close(s);
	if (n < 0)
		return (int)n;
	if ((size_t)n == cap)
		return -EMSGSIZE;
	*len = (size_t)n;
	return 0;
}

static int write_file(const char *path, const char *pem, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, pem, len);
	int e = errno;
	close(fd);
	return w == (ssize_t)len ? 0 : w < 0 ? -e : -EIO;
}

/* A read-only root (an OCI bundle's root.readonly): the bundle is written to the root's /run
 * (a tmpfs of ours) and bound over the root's own bundle, which must exist to be covered. */
static int cover_bundle(const char *root, const char *pem, size_t len)
{
	char path[128], at[128];
	snprintf(path, sizeof(path), "%s/run/bulkhead-ca.crt", root);
	snprintf(at, sizeof(at), "%s%s", root, GUEST_CA_BUNDLE);
	int rc = write_file(path, pem, len);
	if (rc < 0)
		return rc;
	if (mount(path, at, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
		return -errno;
	return 0;
}

/* The bundle at GUEST_CA_BUNDLE in the commands' root (the image's, where tools look), with
 * the directories it needs. */
static int write_bundle(const char *pem, size_t len)
{
	const char *root = guest_root.dir ? guest_root.dir : "";
	const char *dirs[] = { "/etc", "/etc/ssl", "/etc/ssl/certs" };
	char path[128];
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return errno == EROFS && guest_root.dir ? cover_bundle(root, pem, len)
								: -errno;
	}
	snprintf(path, sizeof(path), "%s%s", root, GUEST_CA_BUNDLE);
	/* An image's bundle may be a symbolic link (to a file of its own): replace the link. */
	if (unlink(path) < 0 && errno == EROFS && guest_root.dir)
		return cover_bundle(root, pem, len);
	return write_file(path, pem, len);
}

int proxy_trust_session_ca(void)
{
	static char buf[CA_MAX + 1];
	const char *val;
	size_t vlen, len = 0;
	int rc = cmdline_param(BOOT_ARGS_BROKER, &val, &vlen);
	if (rc <= 0)
		return rc;
	rc = fetch(buf, CA_MAX, &len);
	if (rc < 0) {
		console_error("bulkhead-init: cannot reach the broker for the session CA: %s",
			      strerror(-rc));
		return rc;
	}
	buf[len] = '\0';
	/* The answer is ours (the broker's), but it is still checked: a status line of 200, a
	 * body that is one PEM certificate. */
	static const char end_marker[] = "-----END CERTIFICATE-----\n";
	const char *body = strstr(buf, "\r\n\r\n");
	const char *end = body ? strstr(body, end_marker) : NULL;
	if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0 || !end ||
	    strncmp(body + 4, "-----BEGIN CERTIFICATE-----\n", 28) != 0) {
		console_error("bulkhead-init: the broker's session CA answer is not a certificate");
		return -EPROTO;
	}
	body += 4;
	end += sizeof(end_marker) - 1;
	rc = write_bundle(body, (size_t)(end - body));
	if (rc < 0)
		console_error("bulkhead-init: cannot write %s: %s", GUEST_CA_BUNDLE, strerror(-rc));
	return rc;
}
