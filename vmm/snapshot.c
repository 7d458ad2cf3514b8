/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/snapshot.c: the snapshot file's layout, writing and checking (see snapshot.h). */
#include "vmm/snapshot.h"

#include "lib/errbuf.h"
#include "lib/io.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static uint32_t crc_more(uint32_t crc, const void *p, uint64_t len)
{
	const uint8_t *b = p;
	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, b, n);
		b += n;
		len -= n;
	}
	return crc;
}

static uint32_t header_crc(const struct snap_header *h)
{
	return crc_more(0, h, offsetof(struct snap_header, header_crc));
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

int snap_out_init(struct snap_out *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	if (cap == 0 || cap > SNAP_STATE_MAX)
		return -EINVAL;
	s->buf = calloc(1, cap);
	if (!s->buf)
		return -ENOMEM;
	s->cap = cap;
	return 0;
}

void snap_out_free(struct snap_out *s)
{
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

int snap_put(struct snap_out *s, uint32_t type, uint32_t index, const void *data, uint32_t len)
{
	struct snap_section sec = { .type = type, .index = index, .len = len };
	uint64_t need = sizeof(sec) + align_up(len, 8);

	if (len > SNAP_STATE_MAX || s->nsections >= SNAP_SECTIONS_MAX)
		return -EINVAL;
	if (need > s->cap - s->len)
		return -ENOSPC;
	memcpy(s->buf + s->len, &sec, sizeof(sec));
	memcpy(s->buf + s->len + sizeof(sec), data, len);
	memset(s->buf + s->len + sizeof(sec) + len, 0, (size_t)(need - sizeof(sec) - len));
	s->len += (size_t)need;
	s->nsections++;
	return 0;
}

static int write_all(int fd, const void *p, uint64_t len, uint64_t off)
{
	const uint8_t *b = p;
	while (len) {
		size_t n = len > (1u << 30) ? (1u << 30) : (size_t)len;
		ssize_t w = pwrite(fd, b, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		b += w;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/* All of [off, off+len), or -ENODATA where the file ends first. */
static int read_all(int fd, void *p, uint64_t len, uint64_t off)
{
	ssize_t n = io_pread_full(fd, p, (size_t)len, (off_t)off);
	return n < 0 ? (int)n : (uint64_t)n == len ? 0 : -ENODATA;
}

/* The next extent of gm's memfd holding data at or after *pos: 0 and [*off, *off+*len),
 * 1 at the end, -errno on failure. */
static int next_extent(const struct gmem *gm, uint64_t *pos, uint64_t *off, uint64_t *len)
{
	if (*pos >= gm->size)
		return 1;
	off_t d = lseek(gm->fd, (off_t)*pos, SEEK_DATA);
	if (d < 0)
		return errno == ENXIO ? 1 : -errno;
	off_t h = lseek(gm->fd, d, SEEK_HOLE);
	if (h < 0)
		return -errno;
	uint64_t start = (uint64_t)d / SNAP_PAGE * SNAP_PAGE;
	uint64_t end = align_up((uint64_t)h, SNAP_PAGE);
	if (end > gm->size)
		end = gm->size;
	if (end <= start)
		return -EIO;
	*off = start;
	*len = end - start;
	*pos = end;
	return 0;
}

/* Counts the extents, or writes them (table at hdr->ext_off, RAM at hdr->mem_off). */
static int walk_extents(int fd, struct snap_header *h, const struct gmem *gm, int write)
{
	struct snap_extent batch[256];
	uint64_t pos = 0, n = 0, bytes = 0, off = 0, len = 0;
	uint32_t ecrc = 0, mcrc = 0;
	unsigned nb = 0;
	int rc;

	while ((rc = next_extent(gm, &pos, &off, &len)) == 0) {
		n++;
		bytes += len;
		if (!write)
			continue;
		if ((rc = write_all(fd, gm->host + off, len, h->mem_off + off)))
			return rc;
		mcrc = crc_more(mcrc, gm->host + off, len);
		batch[nb++] = (struct snap_extent){ off, len };
		if (nb == sizeof(batch) / sizeof(batch[0])) {
			ecrc = crc_more(ecrc, batch, sizeof(batch));
			rc = write_all(fd, batch, sizeof(batch),
				       h->ext_off + (n - nb) * sizeof(struct snap_extent));
			if (rc)
				return rc;
			nb = 0;
		}
	}
	if (rc < 0)
		return rc;
	if (write) {
		if (nb) {
			ecrc = crc_more(ecrc, batch, nb * sizeof(batch[0]));
			rc = write_all(fd, batch, nb * sizeof(batch[0]),
				       h->ext_off + (n - nb) * sizeof(struct snap_extent));
			if (rc)
				return rc;
		}
		if (n != h->ext_count)
			return -EAGAIN; /* the RAM changed between the passes */
		h->ext_crc = ecrc;
		h->mem_crc = mcrc;
	}
	h->ext_count = n;
	h->mem_bytes = bytes;
	return 0;
}

int snap_write(int fd, struct snap_header *h, const struct snap_out *s, const struct gmem *gm,
	       char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return errbuf_fail(err, errlen, -EINVAL,
				   "the snapshot descriptor is not a regular file");
	memcpy(h->magic, SNAP_MAGIC, sizeof(h->magic));
	h->version = SNAP_VERSION;
	h->mem_size = gm->size;
	h->state_off = SNAP_PAGE;
	h->state_len = s->len;
	h->state_crc = crc_more(0, s->buf, s->len);
	h->ext_off = align_up(h->state_off + h->state_len, 8);
	if ((rc = walk_extents(fd, h, gm, 0)))
		return errbuf_fail(err, errlen, rc, "cannot find the guest RAM in use: %s",
				   strerror(-rc));
	h->mem_off = align_up(h->ext_off + h->ext_count * sizeof(struct snap_extent), SNAP_PAGE);
	if (ftruncate(fd, 0) < 0)
		return errbuf_fail(err, errlen, -errno, "cannot truncate the snapshot file: %s",
				   strerror(errno));
	if ((rc = write_all(fd, s->buf, s->len, h->state_off)) || (rc = walk_extents(fd, h, gm, 1)))
		return errbuf_fail(err, errlen, rc, "cannot write the snapshot: %s", strerror(-rc));
	h->header_crc = header_crc(h);
	uint8_t page[SNAP_PAGE] = { 0 };
	memcpy(page, h, sizeof(*h));
	if ((rc = write_all(fd, page, sizeof(page), 0)))
		return errbuf_fail(err, errlen, rc, "cannot write the snapshot's header: %s",
				   strerror(-rc));
	if (fsync(fd) < 0)
		return errbuf_fail(err, errlen, -errno, "cannot sync the snapshot: %s",
				   strerror(errno));
	return 0;
}

/* off + len inside [0, limit], without overflow. */
static int inside(uint64_t off, uint64_t len, uint64_t limit)
{
	return off <= limit && len <= limit - off;
}

static int check_header(const struct snap_header *h, uint64_t size, char *err, size_t errlen)
{
	if (memcmp(h->magic, SNAP_MAGIC, sizeof(h->magic)) != 0)
		return errbuf_fail(err, errlen, -EINVAL, "not a bulkhead-vmm snapshot (bad magic)");
	if (h->header_crc != header_crc(h))
		return errbuf_fail(err, errlen, -EBADMSG, "the snapshot's header is damaged (CRC)");
	if (h->version != SNAP_VERSION)
		return errbuf_fail(err, errlen, -EPROTO,
				   "snapshot format version %u; this bulkhead-vmm reads version %u",
				   h->version, SNAP_VERSION);
	if (h->arch != SNAP_ARCH_X86_64)
		return errbuf_fail(err, errlen, -EPROTO, "a snapshot of another architecture (%u)",
				   h->arch);
	if (h->mem_size == 0 || h->mem_size % SNAP_PAGE || h->mem_size > SNAP_MEM_MAX ||
	    h->state_off != SNAP_PAGE || h->state_len > SNAP_STATE_MAX ||
	    h->ext_off != align_up(h->state_off + h->state_len, 8) ||
	    h->ext_count > h->mem_size / SNAP_PAGE ||
	    h->mem_off !=
		    align_up(h->ext_off + h->ext_count * sizeof(struct snap_extent), SNAP_PAGE) ||
	    h->mem_bytes > h->mem_size)
		return errbuf_fail(err, errlen, -EBADMSG, "the snapshot's layout is inconsistent");
	if (!inside(h->state_off, h->state_len, size) ||
	    !inside(h->ext_off, h->ext_count * sizeof(struct snap_extent), size))
		return errbuf_fail(err, errlen, -EBADMSG,
				   "the snapshot is cut short (%llu bytes, its state needs more)",
				   (unsigned long long)size);
	return 0;
}

/* The first section (type, index) among those that start before `end` (all already
 * bounded by check_sections), or NULL. */
static const uint8_t *find_before(const struct snap_in *in, uint32_t type, uint32_t index,
				  uint64_t end, uint32_t *len)
{
	uint64_t at = 0;

	while (at < end) {
		struct snap_section sec;
		memcpy(&sec, in->state + at, sizeof(sec));
		at += sizeof(sec);
		if (sec.type == type && sec.index == index) {
			*len = sec.len;
			return in->state + at;
		}
		at += align_up(sec.len, 8);
	}
	return NULL;
}

/* Each section inside the state, its pad zero, and one per (type, index), so that snap_find
 * never has two to choose from. */
static int check_sections(const struct snap_in *in, char *err, size_t errlen)
{
	uint64_t at = 0, len = in->hdr.state_len;
	unsigned n = 0;

	while (at < len) {
		struct snap_section sec;
		uint32_t dup;
		if (len - at < sizeof(sec) || ++n > SNAP_SECTIONS_MAX)
			return errbuf_fail(err, errlen, -EBADMSG,
					   "the snapshot's sections are malformed");
		memcpy(&sec, in->state + at, sizeof(sec));
		if (align_up(sec.len, 8) > len - at - sizeof(sec) || sec.pad)
			return errbuf_fail(err, errlen, -EBADMSG,
					   "a snapshot section (type %u) is malformed or runs past "
					   "the state",
					   sec.type);
		if (find_before(in, sec.type, sec.index, at, &dup))
			return errbuf_fail(err, errlen, -EBADMSG,
					   "the snapshot has two sections of type %u, index %u",
					   sec.type, sec.index);
		at += sizeof(sec) + align_up(sec.len, 8);
	}
	return 0;
}

static int check_extents(const struct snap_in *in, char *err, size_t errlen)
{
	const struct snap_header *h = &in->hdr;
	uint64_t prev_end = 0, bytes = 0;

	for (uint64_t i = 0; i < h->ext_count; i++) {
		const struct snap_extent *e = &in->ext[i];
		if (e->len == 0 || e->off % SNAP_PAGE || e->len % SNAP_PAGE || e->off < prev_end ||
		    !inside(e->off, e->len, h->mem_size))
			return errbuf_fail(err, errlen, -EBADMSG,
					   "the snapshot's RAM table is malformed");
		prev_end = e->off + e->len;
		bytes += e->len;
	}
	if (bytes != h->mem_bytes)
		return errbuf_fail(err, errlen, -EBADMSG, "the snapshot's RAM table is malformed");
	if (h->ext_count && !inside(h->mem_off, prev_end, in->file_size))
		return errbuf_fail(err, errlen, -EBADMSG,
				   "the snapshot is cut short (%llu bytes; its RAM ends at %llu)",
				   (unsigned long long)in->file_size,
				   (unsigned long long)(h->mem_off + prev_end));
	return 0;
}

int snap_open(int fd, struct snap_in *in, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	memset(in, 0, sizeof(*in));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return errbuf_fail(err, errlen, -EINVAL, "the snapshot is not a regular file");
	if (st.st_mode & 077)
		return errbuf_fail(
			err, errlen, -EPERM,
			"the snapshot is readable or writable by other users (mode %04o); it "
			"holds a guest's memory: chmod 600",
			(unsigned)(st.st_mode & 07777));
	/* Ours, or root's: a jailed VMM runs as its session's uid and restores templates the
	 * launcher (root) keeps; a file any other user owns could have been put there by them. */
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return errbuf_fail(err, errlen, -EPERM,
				   "the snapshot is owned by uid %u, neither by uid %u nor by root",
				   (unsigned)st.st_uid, (unsigned)geteuid());
	in->file_size = (uint64_t)st.st_size;
	if (in->file_size < sizeof(in->hdr))
		return errbuf_fail(err, errlen, -EBADMSG, "the snapshot is cut short (%llu bytes)",
				   (unsigned long long)in->file_size);
	if ((rc = read_all(fd, &in->hdr, sizeof(in->hdr), 0)))
		return errbuf_fail(err, errlen, rc, "cannot read the snapshot: %s", strerror(-rc));
	if ((rc = check_header(&in->hdr, in->file_size, err, errlen)))
		return rc;
	in->state = malloc(in->hdr.state_len ? (size_t)in->hdr.state_len : 1);
	in->ext = malloc(in->hdr.ext_count ? (size_t)in->hdr.ext_count * sizeof(*in->ext) : 1);
	if (!in->state || !in->ext) {
		snap_close(in);
		return errbuf_fail(err, errlen, -ENOMEM, "out of memory reading the snapshot");
	}
	if ((rc = read_all(fd, in->state, in->hdr.state_len, in->hdr.state_off)) ||
	    (rc = read_all(fd, in->ext, in->hdr.ext_count * sizeof(*in->ext), in->hdr.ext_off))) {
		snap_close(in);
		return errbuf_fail(err, errlen, rc, "cannot read the snapshot: %s", strerror(-rc));
	}
	if (crc_more(0, in->state, in->hdr.state_len) != in->hdr.state_crc)
		rc = errbuf_fail(err, errlen, -EBADMSG, "the snapshot's state is damaged (CRC)");
	else if (crc_more(0, in->ext, in->hdr.ext_count * sizeof(*in->ext)) != in->hdr.ext_crc)
		rc = errbuf_fail(err, errlen, -EBADMSG,
				 "the snapshot's RAM table is damaged (CRC)");
	else if (!(rc = check_sections(in, err, errlen)))
		rc = check_extents(in, err, errlen);
	if (rc)
		snap_close(in);
	return rc;
}

void snap_close(struct snap_in *in)
{
	free(in->state);
	free(in->ext);
	in->state = NULL;
	in->ext = NULL;
}

const void *snap_next(const struct snap_in *in, uint64_t *at, struct snap_section *sec)
{
	if (*at >= in->hdr.state_len)
		return NULL;
	memcpy(sec, in->state + *at, sizeof(*sec)); /* bounded by check_sections */
	const void *p = in->state + *at + sizeof(*sec);
	*at += sizeof(*sec) + align_up(sec->len, 8);
	return p;
}

const void *snap_find(const struct snap_in *in, uint32_t type, uint32_t index, uint32_t *len)
{
	return find_before(in, type, index, in->hdr.state_len, len);
}

/* The RAM goes through a buffer into the memfd with pwrite, not into our mapping of it:
 * writing through the mapping would fault once per page (about 15 times slower here,
 * bench/vmm/snapshot_load.c), and nobody runs from that mapping before the guest starts.
 * Two threads share the work where two CPUs are ours: each reads, checks and writes half of
 * the RAM in use, and the halves' CRCs are combined. */
#define SNAP_LOAD_CHUNK	    (1u << 20)
#define SNAP_LOAD_SPLIT_MIN (8u << 20) /* below this one thread is as quick */

struct load_part {
	int fd;
	const struct snap_in *in;
	const struct gmem *gm;
	uint64_t from, to; /* bytes of the RAM in use, counted over the extents in order */
	uint32_t crc;
	int rc;
	char err[160];
};

static void *load_part(void *arg)
{
	struct load_part *p = arg;
	const struct snap_header *h = &p->in->hdr;
	uint8_t *buf = malloc(SNAP_LOAD_CHUNK);
	uint64_t base = 0; /* where extent i starts in the count */

	if (!buf) {
		p->rc = errbuf_fail(p->err, sizeof(p->err), -ENOMEM,
				    "out of memory loading the snapshot");
		return NULL;
	}
	for (uint64_t i = 0; i < h->ext_count && base < p->to && !p->rc; i++) {
		const struct snap_extent *e = &p->in->ext[i];
		uint64_t lo = p->from > base ? p->from - base : 0;
		uint64_t hi = p->to - base < e->len ? p->to - base : e->len;
		for (uint64_t at = lo; at < hi && !p->rc; at += SNAP_LOAD_CHUNK) {
			uint64_t n = hi - at < SNAP_LOAD_CHUNK ? hi - at : SNAP_LOAD_CHUNK;
			if ((p->rc = read_all(p->fd, buf, n, h->mem_off + e->off + at))) {
				errbuf_fail(p->err, sizeof(p->err), p->rc,
					    "cannot read the snapshot's RAM: %s", strerror(-p->rc));
				break;
			}
			p->crc = crc_more(p->crc, buf, n);
			if ((p->rc = write_all(p->gm->fd, buf, n, e->off + at)))
				errbuf_fail(p->err, sizeof(p->err), p->rc,
					    "cannot fill the guest's RAM: %s", strerror(-p->rc));
		}
		base += e->len;
	}
	free(buf);
	return NULL;
}

static bool two_cpus(void)
{
	cpu_set_t set;
	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) >= 2;
}

int snap_load_mem(int fd, const struct snap_in *in, const struct gmem *gm, char *err, size_t errlen)
{
	const struct snap_header *h = &in->hdr;

	if (gm->size != h->mem_size)
		return errbuf_fail(err, errlen, -EINVAL,
				   "the snapshot has %llu MiB of RAM, the VM %llu",
				   (unsigned long long)(h->mem_size >> 20),
				   (unsigned long long)(gm->size >> 20));
	/* Split at a page: the extents are whole pages (checked at open). */
	uint64_t half = h->mem_bytes >= SNAP_LOAD_SPLIT_MIN && two_cpus()
				? h->mem_bytes / 2 / SNAP_PAGE * SNAP_PAGE
				: h->mem_bytes;
	struct load_part parts[2] = {
		{ .fd = fd, .in = in, .gm = gm, .from = 0, .to = half },
		{ .fd = fd, .in = in, .gm = gm, .from = half, .to = h->mem_bytes },
	};
	pthread_t t;
	bool second = half < h->mem_bytes && pthread_create(&t, NULL, load_part, &parts[1]) == 0;
	if (!second)
		parts[0].to = h->mem_bytes;
	load_part(&parts[0]);
	if (second)
		pthread_join(t, NULL);
	for (unsigned i = 0; i < 2; i++)
		if (parts[i].rc)
			return errbuf_fail(err, errlen, parts[i].rc, "%s", parts[i].err);
	uint32_t crc = parts[0].crc;
	if (second)
		crc = (uint32_t)crc32_combine(crc, parts[1].crc, (z_off_t)(h->mem_bytes - half));
	if (crc != h->mem_crc)
		return errbuf_fail(err, errlen, -EBADMSG, "the snapshot's RAM is damaged (CRC)");
	return 0;
}
