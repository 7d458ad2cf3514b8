/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/log.h: bulkhead-vmm's one-line diagnostics on stderr ("bulkhead-vmm: ..."). */
#ifndef BULKHEAD_VMM_LOG_H
#define BULKHEAD_VMM_LOG_H

struct vm_stop;

/* Set-up failure: what failed, the errno text (err > 0, or 0 for none), what to do. */
void vmm_log_setup(const char *what, int err, const char *hint);

/* Any other one-line message; printf-style, the newline is added. */
void vmm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* From now on (stop non-NULL) until unbound (NULL), lines wait for a stderr nobody reads only
 * until that stop is requested (vmm/stopwait.h): a message never holds up the VM's stop. */
void vmm_log_bind(struct vm_stop *stop);

#endif
