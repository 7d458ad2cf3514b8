/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_vsock_tx.c: libFuzzer target for bulkhead-vsock's handling of the guest's
 * virtqueues. The input is guest memory: two 4 KiB regions (separate heap blocks, adjacent in
 * guest-physical space, so a buffer spanning both must be refused) holding the tx and rx
 * split rings and the packets, then patches the guest applies between kicks.
 *
 * Layout: cfg[4] (tx ring size, rx ring size, flags, image length / 32), the image copied to
 * guest-physical 0, then rounds of { u16 offset, u8 len, len bytes } each followed by a kick.
 * Two established connections and one awaiting the guest's RESPONSE exist from the start
 * (socketpairs, the host ends ours); a REQUEST to port 1002 reaches a real listener in a
 * private directory, every other port is refused. ASan checks that no access leaves guest
 * memory; after every kick the tx ring must be drained (or marked broken) with at most one
 * used entry per ring slot, and every connection's buffer must hold exactly the guest bytes
 * not yet forwarded. No file descriptor may outlive an input. */
#include "vsock/conn.h"
#include "vsock/vsock.h"

#include <assert.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define REGION	    4096u
#define UVA_BASE    0x7f0000000000ull
#define CID	    3
#define LISTEN_PORT 1002
/* Ring areas in region 0, room for 32 entries each. */
#define TX_RING 0x000u
#define RX_RING 0x400u

static char dir[32], prefix[64], listen_path[96];
static int listener = -1;
static struct vsock_dev dev;

/* Made and removed for every input: libFuzzer may leave without running atexit handlers. */
static void host_dir_create(void)
{
	strcpy(dir, "/tmp/fuzz_vsock_tx.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(prefix, sizeof(prefix), "%s/v.sock", dir);
	snprintf(listen_path, sizeof(listen_path), "%s_%u", prefix, LISTEN_PORT);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", listen_path);
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(listener, 16))
		abort();
}

static void host_dir_remove(void)
{
	close(listener); /* connections not accepted yet go with it */
	unlink(listen_path);
	rmdir(dir);
}

static void setup_queue(struct vq *vq, unsigned ring, unsigned size_log2)
{
	vq->num = (uint16_t)(1u << size_log2);
	vq->desc_addr = UVA_BASE + ring;
	vq->avail_addr = UVA_BASE + ring + 0x200;
	vq->used_addr = UVA_BASE + ring + 0x280;
	vq->enabled = true;
	int err = vq_map(vq, &dev.mem);
	assert(err == 0);
}

/* A connection as if set up earlier; returns the host program's end of its socket. */
static int preset_conn(enum vsock_state state, uint32_t gport, uint32_t hport, int sndbuf)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		abort();
	if (sndbuf)
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	struct vsock_conn *c = vsock_conn_alloc(&dev);
	c->fd = sv[0];
	c->state = state;
	c->guest_port = gport;
	c->host_port = hport;
	c->peer_buf_alloc = 65536;
	c->readable = true;
	return sv[1];
}

static void drain(int fd)
{
	char buf[4096];
	while (read(fd, buf, sizeof(buf)) > 0) {
	}
}

static void check_conns(void)
{
	assert(dev.rst_count <= VSOCK_RST_RING && dev.rst_head < VSOCK_RST_RING);
	for (unsigned i = 0; i < VSOCK_MAX_CONNS; i++) {
		const struct vsock_conn *c = &dev.conns[i];
		if (c->state == VC_FREE) {
			assert(c->fd == -1 && !c->buf);
			continue;
		}
		assert(c->fd >= 0 && c->buf_len <= VSOCK_BUF_ALLOC &&
		       c->buf_head < VSOCK_BUF_ALLOC);
		assert(c->tx_cnt - c->fwd_cnt == c->buf_len);
		assert(c->buf_len == 0 || c->buf);
	}
}

static void kick(void)
{
	struct vq *tx = &dev.q[VSOCK_Q_TX];
	uint16_t before = tx->used_idx;
	/* What the guest offers is read before the kick: the device's own writes into guest
	 * memory during it (packets into rx buffers the guest may have placed over the tx ring)
	 * are offers for the next kick. */
	uint16_t offered = tx->avail ? __atomic_load_n(&tx->avail->idx, __ATOMIC_RELAXED) : 0;
	vsock_kick(&dev);
	/* Everything the guest offered was taken, unless the ring was given up on. */
	assert(tx->broken || tx->last_avail == offered);
	/* Bounded work per kick: one used entry per ring slot at most. */
	assert((uint16_t)(tx->used_idx - before) <= tx->num);
	check_conns();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(probe);
	host_dir_create();

	/* Exactly REGION bytes each: one byte beyond is an ASan report. */
	uint8_t *mem[2] = { calloc(1, REGION), calloc(1, REGION) };
	uint8_t cfg0 = data[0], cfg1 = data[1], flags = data[2];
	size_t image = ((size_t)data[3] + 1) * 32, pos = 4;
	if (image > size - pos)
		image = size - pos;
	for (size_t i = 0; i < image; i++)
		mem[i / REGION][i % REGION] = data[pos + i];
	pos += image;

	vsock_dev_init(&dev, CID, prefix, -1);
	for (unsigned r = 0; r < 2; r++) {
		int err = vmem_add(&dev.mem, r * REGION, UVA_BASE + r * REGION, REGION, mem[r],
				   NULL, 0);
		assert(err == 0);
	}
	setup_queue(&dev.q[VSOCK_Q_TX], TX_RING, cfg0 % 6);
	if (!(flags & 1))
		setup_queue(&dev.q[VSOCK_Q_RX], RX_RING, cfg1 % 6);
	int host[3];
	host[0] = preset_conn(VC_ESTABLISHED, 7, 1000, 0);
	host[1] = preset_conn(VC_ESTABLISHED, 8, 1001, 4096); /* the host lags: guest data waits */
	host[2] = preset_conn(VC_REQUESTED, 9, 1u << 30, 0);
	if (flags & 2) {
		static const char hello[] = "hello from the host";
		ssize_t n = write(host[0], hello, sizeof(hello));
		(void)n;
	}
	if (flags & 4)
		shutdown(host[0], SHUT_WR); /* the host closes its side: SHUTDOWN to the guest */

	kick();
	/* The guest rewrites its memory between notifications. */
	while (size - pos >= 3) {
		size_t off = ((size_t)data[pos] | (size_t)data[pos + 1] << 8) % (2 * REGION);
		size_t len = data[pos + 2];
		pos += 3;
		if (len > size - pos)
			len = size - pos;
		for (size_t i = 0; i < len && off + i < 2 * REGION; i++)
			mem[(off + i) / REGION][(off + i) % REGION] = data[pos + i];
		pos += len;
		if (flags & 8) {
			/* The host programs read, and epoll reports on every connection. */
			for (unsigned i = 0; i < 3; i++)
				drain(host[i]);
			for (unsigned i = 0; i < VSOCK_MAX_CONNS; i++)
				vsock_host_event(&dev, i, EPOLLIN | EPOLLOUT);
			check_conns();
		}
		kick();
	}

	vsock_dev_reset(&dev);
	for (unsigned i = 0; i < 3; i++)
		close(host[i]);
	host_dir_remove();
	free(mem[0]);
	free(mem[1]);
	/* Every descriptor the device opened was closed again. */
	int probe2 = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(probe2);
	assert(probe2 == probe);
	return 0;
}
