/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/stop.c: the stop request (see stop.h). */
#include "vmm/stop.h"

#include "lib/mono.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

void vm_stop_clear(struct vm_stop *s)
{
	s->fd = -1;
	atomic_init(&s->requested, false);
	atomic_init(&s->status, VM_STOP_UNCLAIMED);
	atomic_init(&s->ns, 0);
}

int vm_stop_open(struct vm_stop *s)
{
	s->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return s->fd < 0 ? -errno : 0;
}

void vm_stop_close(struct vm_stop *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

void vm_stop_request(struct vm_stop *s, int status)
{
	static const uint64_t one = 1;
	int unclaimed = VM_STOP_UNCLAIMED;

	/* The first caller claims the status slot; everyone else's status is dropped. The
	 * flag is set after the status, so a vCPU that sees it reads the winner's status. */
	if (!atomic_compare_exchange_strong(&s->status, &unclaimed, status))
		return;
	atomic_store(&s->ns, mono_ns());
	atomic_store(&s->requested, true);
	/* Wakes the thread that waits for the VM's end; it kicks the other vCPUs. A full
	 * counter (EAGAIN) would mean it is already signalled, so the result is moot. The
	 * eventfd is written once and never read, so it stays readable from here on. */
	ssize_t n = write(s->fd, &one, sizeof(one));
	(void)n;
}
