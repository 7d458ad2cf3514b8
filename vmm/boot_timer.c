/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/boot_timer.c: one port, one timestamp, one stderr line — the first write only, so a
 * guest cannot flood the log or move the mark. */
#include "vmm/boot_timer.h"

#include "lib/boot_timer_abi.h"
#include "lib/mono.h"
#include "vmm/log.h"

#include <string.h>

static void boot_timer_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data,
			      unsigned size)
{
	struct boot_timer *bt = opaque;
	uint64_t now = mono_ns(); /* first: the rest is our overhead, not the guest's */

	(void)addr;
	(void)size;
	if (!is_write || data[0] != BOOT_TIMER_MAGIC || bt->init_ns)
		return;
	bt->init_ns = now;
	vmm_log("boot-timer main=%llu vm_create=%llu first_run=%llu init=%llu",
		(unsigned long long)bt->main_ns, (unsigned long long)bt->vm->created_ns,
		(unsigned long long)atomic_load(&bt->vm->first_run_ns), (unsigned long long)now);
}

static const struct bus_ops boot_timer_ops = { boot_timer_access };

int boot_timer_init(struct boot_timer *bt, struct vm *vm, uint64_t main_ns)
{
	memset(bt, 0, sizeof(*bt));
	bt->vm = vm;
	bt->main_ns = main_ns;
	int err = bus_register(&vm->pio, BOOT_TIMER_PORT, 1, &boot_timer_ops, bt, "boot timer");
	if (err)
		vmm_log_setup("cannot register the boot-timer port", -err, NULL);
	return err;
}
