/* lib/agent_proto.c: reader, writer and EXEC codec for the exec agent protocol. */
#include "lib/agent_proto.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int write_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt > 0) {
		ssize_t n = writev(fd, iov, cnt);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (cnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

int agent_send(int fd, int type, const void *payload, size_t len)
{
	if (len > AGENT_MAX_PAYLOAD || agent_check_len(type, len) < 0)
		return -EINVAL;
	struct agent_hdr h = { .version = AGENT_VERSION,
			       .type = (uint8_t)type,
			       .len = htole32((uint32_t)len) };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)(uintptr_t)payload, len } };
	return write_all(fd, iov, len ? 2 : 1);
}

/* 1 when all read, 0 at EOF before the first byte, -errno otherwise. */
static int read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return got ? -EIO : 0;
		got += (size_t)n;
	}
	return 1;
}

int agent_check_len(int type, size_t len)
{
	switch (type) {
	case AGENT_EXEC:
		return len >= sizeof(struct agent_exec) + 2 ? 0 : -EPROTO;
	case AGENT_STDIN:
	case AGENT_STDOUT:
	case AGENT_STDERR:
	case AGENT_ERROR:
		return 0;
	case AGENT_SIGNAL:
		return len == sizeof(uint32_t) ? 0 : -EPROTO;
	case AGENT_WINSIZE:
		return len == 2 * sizeof(uint16_t) ? 0 : -EPROTO;
	case AGENT_EXIT:
		return len == sizeof(struct agent_exit) ? 0 : -EPROTO;
	case AGENT_READY:
		return len == 0 ? 0 : -EPROTO;
	}
	return -EPROTO;
}

int agent_recv(int fd, void *buf, size_t bufsize, size_t *len)
{
	struct agent_hdr h;
	int rc = read_all(fd, &h, sizeof(h));
	if (rc <= 0)
		return rc;
	uint32_t n = le32toh(h.len);
	if (h.version != AGENT_VERSION || h.reserved != 0 || n > AGENT_MAX_PAYLOAD ||
	    agent_check_len(h.type, n) < 0)
		return -EPROTO;
	if (n > bufsize)
		return -EMSGSIZE;
	if (n) {
		rc = read_all(fd, buf, n);
		if (rc <= 0)
			return rc == 0 ? -EIO : rc;
	}
	*len = n;
	return h.type;
}

long agent_exec_encode(void *buf, size_t buflen, uint32_t flags, uint16_t rows, uint16_t cols,
		       const char *cwd, char *const argv[], char *const env[])
{
	struct agent_exec e = { .flags = htole32(flags),
				.rows = htole16(rows),
				.cols = htole16(cols) };
	size_t pos = sizeof(e);
	uint32_t argc = 0, envc = 0;
	if (buflen < pos)
		return -E2BIG;
	const char *const *lists[3] = { (const char *const[]){ cwd, NULL },
					(const char *const *)argv, (const char *const *)env };
	for (int l = 0; l < 3; l++) {
		for (size_t i = 0; lists[l] && lists[l][i]; i++) {
			size_t n = strlen(lists[l][i]) + 1;
			if (n > buflen - pos)
				return -E2BIG;
			memcpy((char *)buf + pos, lists[l][i], n);
			pos += n;
			argc += l == 1;
			envc += l == 2;
		}
	}
	if (argc == 0 || argc > AGENT_MAX_ARGS || envc > AGENT_MAX_ARGS || pos > AGENT_MAX_PAYLOAD)
		return -E2BIG;
	e.argc = htole32(argc);
	e.envc = htole32(envc);
	memcpy(buf, &e, sizeof(e));
	return (long)pos;
}

int agent_exec_decode(const void *payload, size_t len, struct agent_exec_req *req)
{
	memset(req, 0, sizeof(*req));
	struct agent_exec e;
	if (len < sizeof(e))
		return -EPROTO;
	memcpy(&e, payload, sizeof(e));
	req->flags = le32toh(e.flags);
	req->rows = le16toh(e.rows);
	req->cols = le16toh(e.cols);
	req->argc = le32toh(e.argc);
	req->envc = le32toh(e.envc);
	if (req->argc == 0 || req->argc > AGENT_MAX_ARGS || req->envc > AGENT_MAX_ARGS ||
	    (req->flags & ~(AGENT_EXEC_TTY | AGENT_EXEC_STDIN)))
		return -EPROTO;
	req->argv = calloc(req->argc + 1, sizeof(char *));
	req->env = calloc(req->envc + 1, sizeof(char *));
	if (!req->argv || !req->env)
		goto bad;
	const char *p = (const char *)payload + sizeof(e), *end = (const char *)payload + len;
	size_t want = 1 + req->argc + req->envc;
	for (size_t i = 0; i < want; i++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			goto bad;
		if (i == 0)
			req->cwd = p;
		else if (i <= req->argc)
			req->argv[i - 1] = p;
		else
			req->env[i - 1 - req->argc] = p;
		p = nul + 1;
	}
	if (p != end || req->cwd[0] != '/' || req->argv[0][0] == '\0')
		goto bad;
	for (uint32_t i = 0; i < req->envc; i++)
		if (!strchr(req->env[i], '=') || req->env[i][0] == '=')
			goto bad;
	return 0;
bad:
	agent_exec_free(req);
	return -EPROTO;
}

void agent_exec_free(struct agent_exec_req *req)
{
	free(req->argv);
	free(req->env);
	req->argv = NULL;
	req->env = NULL;
}
