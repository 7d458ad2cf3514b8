/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/stopwait.h: blocking I/O that gives way to the VM's stop — what a vCPU or the main
 * thread uses to wait on anything outside the VM (the console's reader), so that a stop
 * request (the guest's end, --timeout-ms, a failed back end) is never held up by it. */
#ifndef BULKHEAD_VMM_STOPWAIT_H
#define BULKHEAD_VMM_STOPWAIT_H

#include "vmm/stop.h"

#include <stddef.h>

/* Once the VM is stopping, a wait goes on at most this long past the stop request, so that a
 * reader that is merely slow still gets the console's last line; never longer. */
#define STOPWAIT_GRACE_MS 500

/* Waits until fd is ready for `events` (POLLIN or POLLOUT), the VM's stop eventfd beside it.
 * Signals (the vCPU kick) end no wait early and restart none. stop may be NULL (none to
 * watch: unit tests). Returns 1 when fd is ready (or in error: the next call says which), 0
 * when the VM is stopping and its grace has passed, or -errno. */
int stopwait_fd(struct vm_stop *stop, int fd, short events);

/* Writes len bytes of buf to fd, each write after stopwait_fd() said there is room and no
 * larger than PIPE_BUF (so a write to a pipe cannot block). Returns the bytes written: fewer
 * than len when the reader is gone or the VM stopped first (the rest is dropped). */
size_t stopwait_write(struct vm_stop *stop, int fd, const void *buf, size_t len);

#endif
