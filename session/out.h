/* SPDX-License-Identifier: Apache-2.0 */
/* session/out.h: our own stdout and stderr while a session runs — the guest's output, console
 * noise with -v, the final one-line messages — never wait on a reader that stopped reading.
 * A guest that fills our stderr (a console flood with -v, 64 KiB of its own stderr) while
 * the caller does not read it must not hold the session past its deadline, nor its teardown. */
#ifndef BULKHEAD_SESSION_OUT_H
#define BULKHEAD_SESSION_OUT_H

#include <stddef.h>

/* How long one message on stderr may wait for room before it is dropped; once one was
 * dropped, later ones only take what fits at once. */
#define OUT_MESSAGE_WAIT_MS 1000

/* Gives descriptors 1 and 2, when they are pipes, FIFOs or terminals, non-blocking open file
 * descriptions of their own (the caller's shell keeps its blocking ones), and makes stderr a
 * stream whose writes wait at most OUT_MESSAGE_WAIT_MS. Call once, before the session runs. */
void out_unblock(void);

/* Writes what fd takes now, without waiting; drops the rest. Returns the bytes written. */
size_t out_try(int fd, const void *buf, size_t len);

#endif
