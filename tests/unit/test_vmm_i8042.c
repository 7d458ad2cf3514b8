/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_i8042.c: bulkhead-vmm's 8042 answers every command of Linux's probe at
 * once, in the order drivers/input/serio/i8042.c sends them, so no guest waits out a poll. */
#include "vmm/x86/i8042.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define STS_OBF	   0x01
#define STS_AUXOBF 0x20

static uint8_t rd(struct i8042 *k, unsigned addr)
{
	uint8_t v = 0xee;
	i8042_access(k, addr, false, &v, 1);
	return v;
}

static void wr(struct i8042 *k, unsigned addr, uint8_t v)
{
	i8042_access(k, addr, true, &v, 1);
}

/* Linux's i8042_command(): a command, its data bytes, then each reply must be waiting (OBF)
 * on the first status read; returns the reply, or -1 where Linux would start polling. */
static int command(struct i8042 *k, uint8_t cmd, int data)
{
	wr(k, 4, cmd);
	if (data >= 0)
		wr(k, 0, (uint8_t)data);
	uint8_t sts = rd(k, 4);
	if (!(sts & STS_OBF))
		return -1;
	return rd(k, 0) | (sts & STS_AUXOBF ? 0x100 : 0);
}

static void test_linux_probe_answered_at_once(void **state)
{
	(void)state;
	struct i8042 k;
	memset(&k, 0, sizeof(k)); /* vm NULL: nothing here pulses the reset line */
	k.ctr = 0x30;

	assert_int_equal(rd(&k, 4) & STS_OBF, 0);      /* i8042_flush: empty */
	assert_int_equal(command(&k, 0xaa, -1), 0x55); /* controller self-test */
	assert_int_equal(command(&k, 0x20, -1), 0x30); /* read CTR */
	wr(&k, 4, 0x60);			       /* write CTR */
	wr(&k, 0, 0x30);
	assert_int_equal(command(&k, 0x20, -1), 0x30);
	/* i8042_check_aux: the loopback must come back at once, and not as aux data (there is
	 * no aux port); the interface test must then report an error, neither 0 nor 0xfa/0xff,
	 * so the probe ends there: no IRQ 12 test. */
	int loop = command(&k, 0xd3, 0x5a);
	assert_true(loop >= 0);
	assert_int_equal(loop & 0x100, 0);
	int test = command(&k, 0xa9, -1);
	assert_true(test > 0 && test != 0xfa && test != 0xff);
	/* Nothing is left waiting for the keyboard driver. */
	assert_int_equal(rd(&k, 4) & STS_OBF, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linux_probe_answered_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
