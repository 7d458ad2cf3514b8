/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/x86/i8042.c: enough of an 8042 for Linux to find a controller with no devices behind
 * it, and for `outb 0xfe, 0x64` (pulse the reset line) to end the VM cleanly. Every command
 * Linux's probe sends is answered at once: a command left unanswered costs the guest a 0.5 s
 * poll of the status port (10,000 reads, each a VM exit). */
#include "vmm/x86/i8042.h"

#include "vmm/log.h"
#include "vmm/x86/layout.h"

#include <errno.h>
#include <string.h>

#define I8042_STS_OBF	 0x01
#define I8042_STS_SYS	 0x04 /* self-test passed */
#define I8042_STS_CMD	 0x08 /* last write was a command */
#define I8042_STS_UNLOCK 0x10 /* keyboard not inhibited (Linux warns "Keylock active") */
#define I8042_STS_AUXOBF 0x20 /* the byte waiting came from the aux (mouse) port */
#define I8042_CMD_RD_CTR 0x20
#define I8042_CMD_WR_CTR 0x60
#define I8042_CMD_TEST	 0xaa /* controller self-test: answers 0x55 */
#define I8042_CMD_KBTEST 0xab /* keyboard interface test: answers 0 (ok) */
#define I8042_CMD_AUXTST 0xa9 /* aux interface test: 0x01, "clock line stuck": no aux port */
#define I8042_CMD_AUXLP	 0xd3 /* aux loopback: the next data byte comes back as aux data */
#define I8042_CMD_RD_OUT 0xd0
#define I8042_CMD_WR_OUT 0xd1
#define I8042_CMD_RESET	 0xfe /* pulse output line 0: the CPU reset */
#define I8042_OUT_RESET	 0x01 /* output port bit 0: 0 = hold the CPU in reset */

static void i8042_reply(struct i8042 *k, uint8_t v)
{
	k->out = v;
	k->obf = true;
}

static void i8042_reset(struct i8042 *k)
{
	vmm_log("guest requested a reset (i8042): stopping");
	vm_request_stop(k->vm, k->reset_status);
}

static void i8042_command(struct i8042 *k, uint8_t cmd)
{
	switch (cmd) {
	case I8042_CMD_RD_CTR:
		i8042_reply(k, k->ctr);
		break;
	case I8042_CMD_WR_CTR:
	case I8042_CMD_WR_OUT:
	case I8042_CMD_AUXLP:
		k->pending = cmd;
		break;
	case I8042_CMD_TEST:
		i8042_reply(k, 0x55);
		break;
	case I8042_CMD_KBTEST:
		i8042_reply(k, 0x00);
		break;
	case I8042_CMD_AUXTST:
		/* With the loopback below, Linux concludes "no aux port" in two replies
		 * instead of two timed-out polls and a 250 ms wait for IRQ 12. */
		i8042_reply(k, 0x01);
		break;
	case I8042_CMD_RD_OUT:
		i8042_reply(k, I8042_OUT_RESET);
		break;
	default:
		/* 0xf0..0xff pulse output lines; bit 0 clear in the low nibble pulses reset. */
		if (cmd >= 0xf0 && !(cmd & I8042_OUT_RESET))
			i8042_reset(k);
		break; /* enable/disable interfaces and the rest: nothing behind them */
	}
}

void i8042_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	struct i8042 *k = opaque;
	/* One range, 0x60..0x64: offset 0 is data, 4 command/status. 0x61 (speaker, NMI
	 * status) is answered by KVM's PIT and never gets here; 0x62/0x63 are unused. */
	if (addr != 0 && addr != 4)
		return;
	if (!is_write)
		memset(data, 0, size);
	if (addr == 0 && !is_write) {
		data[0] = k->obf ? k->out : 0;
		k->obf = false;
	} else if (addr == 0) {
		uint8_t cmd = k->pending;
		k->pending = 0;
		if (cmd == I8042_CMD_WR_CTR)
			k->ctr = data[0];
		else if (cmd == I8042_CMD_WR_OUT && !(data[0] & I8042_OUT_RESET))
			i8042_reset(k);
		else if (cmd == I8042_CMD_AUXLP)
			i8042_reply(k, data[0]); /* without STS_AUXOBF: no aux port looped it */
		/* A byte for the keyboard: there is none, so it is dropped unanswered. */
	} else if (!is_write) {
		data[0] =
			(uint8_t)(I8042_STS_SYS | I8042_STS_UNLOCK | (k->obf ? I8042_STS_OBF : 0) |
				  (k->pending ? I8042_STS_CMD : 0));
	} else {
		i8042_command(k, data[0]);
	}
}

void i8042_save(const struct i8042 *k, struct i8042_state *s)
{
	*s = (struct i8042_state){
		.ctr = k->ctr, .pending = k->pending, .obf = k->obf, .out = k->out
	};
}

int i8042_state_check(const struct i8042_state *s)
{
	bool pending_ok = s->pending == 0 || s->pending == I8042_CMD_WR_CTR ||
			  s->pending == I8042_CMD_WR_OUT || s->pending == I8042_CMD_AUXLP;
	if (!pending_ok || s->obf > 1 || s->pad[0] || s->pad[1] || s->pad[2] || s->pad[3])
		return -EINVAL;
	return 0;
}

int i8042_restore(struct i8042 *k, const struct i8042_state *s)
{
	if (i8042_state_check(s))
		return -EINVAL;
	k->ctr = s->ctr;
	k->pending = s->pending;
	k->obf = s->obf;
	k->out = s->out;
	return 0;
}

static const struct bus_ops i8042_ops = { i8042_access };

int i8042_init(struct i8042 *k, struct vm *vm, int reset_status)
{
	int err;
	memset(k, 0, sizeof(*k));
	k->vm = vm;
	k->reset_status = reset_status;
	k->ctr = 0x30; /* both interfaces disabled, no interrupts: nothing is attached */
	err = bus_register(&vm->pio, X86_I8042_DATA_PORT,
			   X86_I8042_CMD_PORT - X86_I8042_DATA_PORT + 1, &i8042_ops, k, "i8042");
	if (err)
		vmm_log_setup("cannot register the i8042 ports", -err, NULL);
	return err;
}
