/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/virtio/vhost_user_dev.c: a virtio device whose queues live in a vhost-user back end.
 * The VMM keeps only the register window and the config space; rings, kicks and interrupts go
 * straight between the guest (through KVM) and the back end. */
#include "vmm/virtio/vhost_user_dev.h"
#include "vmm/virtio/vhost_user_dev_internal.h"

#include "lib/vmm_exit.h"
#include "vmm/log.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/virtio_fs.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_vsock.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

_Static_assert(sizeof(struct virtio_fs_config) <= VHOST_USER_DEV_CONFIG_MAX, "fs config fits");

/* A back end failed: stop the VM once, say so once, whichever thread noticed first. A request
 * abandoned because the VM is stopping anyway (-ECANCELED) is nobody's failure: the stop keeps
 * its own status and says nothing here. */
void vhost_user_dev_fatal(struct vhost_user_dev *v, const char *why)
{
	struct virtio_devs *d = v->set;
	if (v->front.err == -ECANCELED)
		return;
	if (atomic_exchange(&d->stopped, true))
		return;
	vmm_log("vhost-user back end %s: %s; session stopped", v->name, why);
	vm_request_stop(d->vm, VMM_EXIT_BACKEND);
	if (d->on_stop)
		d->on_stop(d->on_stop_arg);
}

static uint64_t vud_features(void *dev)
{
	struct vhost_user_dev *v = dev;
	/* PROTOCOL_FEATURES is between us and the back end, never the guest's business. */
	return v->front.backend_features & ~(1ull << VHOST_USER_F_PROTOCOL_FEATURES);
}

static void vud_config_read(void *dev, uint32_t off, uint8_t *data, unsigned size)
{
	struct vhost_user_dev *v = dev;
	memcpy(data, v->config + off, size); /* the transport checked off + size */
}

static void vud_config_write(void *dev, uint32_t off, const uint8_t *data, unsigned size)
{
	/* Both configs are read-only for the driver; writes are dropped. */
	(void)dev;
	(void)off;
	(void)data;
	(void)size;
}

static int vud_features_ok(void *dev, uint64_t driver_features)
{
	struct vhost_user_dev *v = dev;
	v->driver_features = driver_features;
	return 0;
}

int vhost_user_dev_start(struct vhost_user_dev *v, struct virtio_mmio *t, unsigned q)
{
	const struct virtio_mmio_queue *vq = &t->q[q];
	int err = vu_front_start_ring(&v->front, &t->vm->mem, q, vq->num, v->base[q], vq->desc,
				      vq->driver, vq->device, vq->kick_fd, t->irq_fd);
	if (err) {
		vhost_user_dev_fatal(v, v->front.why);
		return err;
	}
	v->started[q] = true;
	v->base[q] = 0; /* a later restart by the driver begins afresh */
	return 0;
}

static int vud_stop(struct vhost_user_dev *v, unsigned q)
{
	if (!v->started[q])
		return 0;
	v->started[q] = false;
	int err = vu_front_stop_ring(&v->front, q, NULL);
	if (err)
		vhost_user_dev_fatal(v, v->front.why);
	return err;
}

static int vud_queue_ready(void *dev, struct virtio_mmio *t, unsigned q, bool ready)
{
	struct vhost_user_dev *v = dev;
	if (q >= v->backend_queues)
		return 0;
	if (!ready)
		return vud_stop(v, q);
	return v->driver_ok ? vhost_user_dev_start(v, t, q) : 0;
}

static int vud_driver_ok(void *dev, struct virtio_mmio *t)
{
	struct vhost_user_dev *v = dev;
	int err = vu_front_set_features(&v->front, v->driver_features);
	if (err) {
		vhost_user_dev_fatal(v, v->front.why);
		return err;
	}
	v->driver_ok = true;
	for (unsigned q = 0; q < v->backend_queues; q++) {
		if (t->q[q].ready && (err = vhost_user_dev_start(v, t, q)))
			return err;
	}
	return 0;
}

static void vud_reset(void *dev, struct virtio_mmio *t)
{
	struct vhost_user_dev *v = dev;
	(void)t;
	/* GET_VRING_BASE makes the back end stop touching the rings before the driver reuses
	 * their memory. */
	for (unsigned q = 0; q < v->backend_queues; q++)
		vud_stop(v, q);
	v->driver_ok = false;
	v->driver_features = 0;
}

static const struct virtio_dev_ops vhost_user_dev_ops = {
	.features = vud_features,
	.config_read = vud_config_read,
	.config_write = vud_config_write,
	.features_ok = vud_features_ok,
	.queue_ready = vud_queue_ready,
	.driver_ok = vud_driver_ok,
	.reset = vud_reset,
};

void virtio_devs_init(struct virtio_devs *d, struct vm *vm, uint64_t base, unsigned nslots,
		      unsigned first_gsi)
{
	memset(d, 0, sizeof(*d));
	d->vm = vm;
	d->base = base;
	d->nslots = nslots;
	d->first_gsi = first_gsi;
	d->wake_fd = -1;
	atomic_init(&d->stopped, false);
}

/* Config space, built by us like QEMU's vhost-user-fs-device does: the back ends know
 * nothing of tags or CIDs' place in the guest's view. Little-endian fields (x86). */
static int vhost_user_dev_config(struct vhost_user_dev *v, const struct vhost_user_dev_cfg *cfg,
				 uint32_t *device_id, unsigned *nqueues)
{
	if (cfg->type == VHOST_USER_DEV_FS) {
		struct virtio_fs_config c = { .num_request_queues = 1 };
		size_t n = cfg->fs_tag ? strlen(cfg->fs_tag) : 0;
		if (n == 0 || n > VIRTIO_FS_TAG_MAX)
			return -EINVAL;
		memcpy(c.tag, cfg->fs_tag, n);
		memcpy(v->config, &c, sizeof(c));
		v->config_size = sizeof(c);
		*device_id = VIRTIO_ID_FS;
		*nqueues = 2; /* hiprio + one request queue (virtiofsd serves one) */
		v->backend_queues = 2;
		return 0;
	}
	if (cfg->type == VHOST_USER_DEV_VSOCK) {
		struct virtio_vsock_config c = { .guest_cid = cfg->vsock_cid };
		/* Linux keeps CIDs in 32 bits; -1 is VMADDR_CID_ANY. */
		if (cfg->vsock_cid < VIRTIO_VSOCK_CID_MIN || cfg->vsock_cid >= UINT32_MAX)
			return -EINVAL;
		memcpy(v->config, &c, sizeof(c));
		v->config_size = sizeof(c);
		*device_id = VIRTIO_ID_VSOCK;
		*nqueues = 3;	       /* rx, tx, event */
		v->backend_queues = 2; /* the event queue is ours: used only after a restore */
		return 0;
	}
	return -EINVAL;
}

int virtio_vhost_user_add(struct virtio_devs *d, const struct vhost_user_dev_cfg *cfg)
{
	char what[320], sock_name[32];
	uint32_t device_id = 0;
	unsigned nqueues = 0;
	int err;

	if (d->n >= d->nslots || d->n >= VIRTIO_DEVS_MAX) {
		vmm_log_setup("too many virtio devices", ENOSPC, "enlarge the MMIO hole");
		return -ENOSPC;
	}
	struct vhost_user_dev *v = calloc(1, sizeof(*v));
	if (!v) {
		vmm_log_setup("out of memory for a virtio device", ENOMEM, NULL);
		return -ENOMEM;
	}
	v->set = d;
	v->front.sock = -1;
	snprintf(v->name, sizeof(v->name), "%s", cfg->name ? cfg->name : "?");
	if ((!cfg->socket_path && cfg->socket_fd < 0) ||
	    vhost_user_dev_config(v, cfg, &device_id, &nqueues)) {
		snprintf(what, sizeof(what), "vhost-user device %s: bad declaration", v->name);
		vmm_log_setup(what, EINVAL, "fs needs a 1..36-byte tag, vsock a CID >= 3");
		free(v);
		return -EINVAL;
	}
	snprintf(sock_name, sizeof(sock_name), "descriptor %d", cfg->socket_fd);
	if (cfg->socket_path)
		err = vu_front_connect(&v->front, cfg->socket_path, v->name, cfg->timeout_ms,
				       d->vm->stop.fd);
	else
		err = vu_front_adopt(&v->front, cfg->socket_fd, v->name, cfg->timeout_ms,
				     d->vm->stop.fd);
	if (!err)
		err = vu_front_handshake(&v->front, v->backend_queues);
	if (!err)
		err = vu_front_set_mem_table(&v->front, &d->vm->mem);
	if (err) {
		snprintf(what, sizeof(what), "vhost-user back end %s (%s): %s", v->name,
			 cfg->socket_path ? cfg->socket_path : sock_name, v->front.why);
		vmm_log_setup(what, 0, "is the back end running and listening on that socket?");
		goto fail;
	}
	struct virtio_mmio_cfg mc = {
		.device_id = device_id,
		.nqueues = nqueues,
		.config_size = v->config_size,
		.irq_bypasses_vmm = true,
		.ops = &vhost_user_dev_ops,
		.dev = v,
	};
	v->device_id = device_id;
	err = virtio_mmio_init(&v->mmio, d->vm, d->base + (uint64_t)d->n * VIRTIO_MMIO_WINDOW,
			       d->first_gsi + d->n, &mc);
	if (err)
		goto fail;
	d->devs[d->n++] = v;
	return 0;

fail:
	vu_front_close(&v->front);
	free(v);
	return err;
}

int virtio_devs_cmdline(const struct virtio_devs *d, char *buf, size_t len)
{
	size_t total = 0;
	if (len)
		buf[0] = 0;
	for (unsigned i = 0; i < d->n; i++) {
		char one[64];
		int n = virtio_mmio_cmdline(&d->devs[i]->mmio, one, sizeof(one));
		if (n < 0)
			return n;
		if (total + 1 < len)
			snprintf(buf + total, len - total, "%s%s", i ? " " : "", one);
		total += (size_t)n + (i ? 1 : 0);
	}
	return (int)total;
}

int virtio_devs_socket(const struct virtio_devs *d, unsigned i)
{
	return i < d->n ? d->devs[i]->front.sock : -1;
}

struct virtio_mmio *virtio_devs_transport(struct virtio_devs *d, unsigned i)
{
	return i < d->n ? &d->devs[i]->mmio : NULL;
}

/* Back ends never speak unasked (we negotiate no back-end channel), so the only thing to
 * watch between requests is a hang-up: a dead back end is noticed at once, not at the
 * guest's next request. */
static void *virtio_devs_watcher(void *arg)
{
	struct virtio_devs *d = arg;
	struct pollfd p[VIRTIO_DEVS_MAX + 1];

	d->watcher_start_err = d->watcher_start ? d->watcher_start(d->watcher_start_arg) : 0;
	sem_post(&d->watcher_started);
	if (d->watcher_start_err)
		return NULL;

	for (unsigned i = 0; i < d->n; i++)
		p[i] = (struct pollfd){ .fd = d->devs[i]->front.sock, .events = POLLRDHUP };
	p[d->n] = (struct pollfd){ .fd = d->wake_fd, .events = POLLIN };
	for (;;) {
		int n = poll(p, d->n + 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[d->n].revents)
			return NULL;
		for (unsigned i = 0; i < d->n; i++) {
			if (!(p[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
				continue;
			vhost_user_dev_fatal(d->devs[i], "closed its socket (exited or killed)");
			p[i].fd = -1; /* reported once; poll() skips negative fds */
		}
	}
}

int virtio_devs_watch(struct virtio_devs *d, void (*on_stop)(void *arg), void *arg)
{
	int err;

	d->on_stop = on_stop;
	d->on_stop_arg = arg;
	d->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (d->wake_fd < 0) {
		err = errno;
		vmm_log_setup("cannot create the back-end watcher's eventfd", err, NULL);
		return -err;
	}
	sem_init(&d->watcher_started, 0, 0);
	err = pthread_create(&d->watcher, NULL, virtio_devs_watcher, d);
	if (err) {
		vmm_log_setup("cannot start the back-end watcher thread", err, NULL);
		goto fail;
	}
	while (sem_wait(&d->watcher_started) < 0 && errno == EINTR)
		;
	err = -d->watcher_start_err;
	if (err) {
		pthread_join(d->watcher, NULL);
		goto fail;
	}
	d->watching = true; /* the semaphore goes with the thread, in virtio_devs_destroy */
	return 0;
fail:
	sem_destroy(&d->watcher_started);
	close(d->wake_fd);
	d->wake_fd = -1;
	return -err;
}

void virtio_devs_destroy(struct virtio_devs *d)
{
	if (d->watching) {
		(void)eventfd_write(d->wake_fd, 1);
		pthread_join(d->watcher, NULL);
		sem_destroy(&d->watcher_started);
		d->watching = false;
	}
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	d->wake_fd = -1;
	while (d->n) {
		struct vhost_user_dev *v = d->devs[--d->n];
		virtio_mmio_destroy(&v->mmio);
		vu_front_close(&v->front);
		free(v);
		d->devs[d->n] = NULL;
	}
}
