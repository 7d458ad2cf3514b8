/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/i8042.h: the PC keyboard controller, reduced to what Linux's probe and its
 * reboot=k path use; the CPU-reset command ends the VM with a configured status. */
#ifndef BULKHEAD_VMM_X86_I8042_H
#define BULKHEAD_VMM_X86_I8042_H

#include "vmm/vm.h"

#include <stdbool.h>
#include <stdint.h>

struct i8042 {
	struct vm *vm;
	int reset_status; /* exit status for a guest-requested reset */
	uint8_t ctr;	  /* controller configuration ("command byte") */
	uint8_t pending;  /* command awaiting its data byte on port 0x60 (0: none) */
	bool obf;	  /* output buffer full: `out` waits on port 0x60 */
	uint8_t out;
};

/* Registers ports 0x60 and 0x64. Set-up tier. */
int i8042_init(struct i8042 *k, struct vm *vm, int reset_status);
/* What a snapshot keeps of it. */
struct i8042_state {
	uint8_t ctr, pending, obf, out;
	uint8_t pad[4];
};
void i8042_save(const struct i8042 *k, struct i8042_state *s);
/* Whether the controller can be in s: a pending command is one that takes a data byte,
 * flags 0 or 1, pad zero. 0 or -EINVAL. */
int i8042_state_check(const struct i8042_state *s);
/* i8042_state_check, then the state; -EINVAL leaves k as it was. */
int i8042_restore(struct i8042 *k, const struct i8042_state *s);

/* The bus handler (exposed for tests): ADDR 0 is port 0x60 (data), 4 is 0x64 (status/command). */
void i8042_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size);

#endif
