/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/arm64/snapshot_vm.c: snapshots on arm64 — not built yet. Asking for one (--snapshot-fd,
 * --restore-fd) is refused at set-up with one line; nothing is half-saved or half-loaded. The
 * x86 implementation is vmm/snapshot_vm.c. */
#include "vmm/snapshot_vm.h"

#include "vmm/log.h"
#include "vmm/machine.h"
#include "vmm/options.h"

#include <errno.h>

static int refuse(const char *what)
{
	vmm_log_setup(what, ENOTSUP, "snapshots are x86-only in this build of bulkhead-vmm");
	return -ENOTSUP;
}

void snapshot_block_signal(void)
{
}

int snapshot_setup(struct machine *m, const struct vmm_device *devs, unsigned ndevs,
		   const struct vcpu_pause **pz)
{
	(void)devs;
	(void)ndevs;
	*pz = NULL;
	m->snap.fd = m->o->snapshot_fd;
	return m->snap.fd >= 0 ? refuse("--snapshot-fd") : 0;
}

void snapshot_fini(struct machine *m)
{
	(void)m;
}

int snapshot_restore_open(struct vmm_opts *o, struct snap_in *in)
{
	(void)o;
	(void)in;
	return refuse("--restore-fd");
}

const void *snapshot_section(const struct snap_in *in, uint32_t type, uint32_t len,
			     const char *what)
{
	(void)in;
	(void)type;
	(void)len;
	(void)what;
	return NULL;
}

int snapshot_restore(struct machine *m, const struct vmm_device *devs, unsigned ndevs,
		     struct snap_in *in)
{
	(void)m;
	(void)devs;
	(void)ndevs;
	(void)in;
	return refuse("--restore-fd");
}
