/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_vmm_uart.c: the 8250 register model (what Linux's probe and driver rely
 * on) and CPUID normalisation (APIC IDs, topology, hypervisor bit), without KVM. */
#include "vmm/uart.h"
#include "vmm/x86/cpuid.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static uint8_t rd(struct uart *u, unsigned reg)
{
	uint8_t v = 0xee;
	uart_access(u, reg, false, &v, 1);
	return v;
}

static void wr(struct uart *u, unsigned reg, uint8_t v)
{
	uart_access(u, reg, true, &v, 1);
}

static void test_uart_registers(void **state)
{
	(void)state;
	struct uart u;
	int p[2];
	assert_int_equal(pipe(p), 0);
	memset(&u, 0, sizeof(u));
	u.out_fd = p[1]; /* vm NULL: the interrupt line is modelled but not sent */

	wr(&u, 3, 0x83); /* DLAB: divisor latch at 0 and 1 */
	wr(&u, 0, 0x0c);
	wr(&u, 1, 0x00);
	assert_int_equal(rd(&u, 0), 0x0c);
	wr(&u, 3, 0x03);
	assert_int_equal(rd(&u, 3), 0x03);
	wr(&u, 7, 0x5a);
	assert_int_equal(rd(&u, 7), 0x5a);
	assert_int_equal(rd(&u, 5) & 0x60, 0x60); /* THRE | TEMT */
	assert_int_equal(rd(&u, 2), 0x01);	  /* no interrupt, FIFOs off */
	wr(&u, 2, 0x07);
	assert_int_equal(rd(&u, 2) & 0xc0, 0xc0); /* FIFOs on: a 16550A */
	wr(&u, 4, 0x1f);			  /* loopback, all outputs */
	assert_int_equal(rd(&u, 6) & 0xf0, 0xf0);
	wr(&u, 0, 'x'); /* looped back: nothing leaves */
	wr(&u, 4, 0x0b);

	/* THRI: raised when enabled with the THR empty, acknowledged by reading IIR. */
	wr(&u, 1, 0x02);
	assert_true(u.irq_level);
	assert_int_equal(rd(&u, 2) & 0x0f, 0x02);
	assert_false(u.irq_level);
	assert_int_equal(rd(&u, 2) & 0x0f, 0x01);
	/* A byte written: the line drops and rises again (a fresh edge) once it is sent. */
	wr(&u, 0, 'A');
	assert_true(u.irq_level);
	wr(&u, 0, '\n');
	wr(&u, 1, 0x00);
	assert_false(u.irq_level);
	char buf[8] = { 0 };
	assert_int_equal(read(p[0], buf, sizeof(buf)), 2);
	assert_string_equal(buf, "A\n");
	/* Any offset wraps into the 8 registers; wider reads zero the upper bytes. */
	uint8_t wide[4] = { 0xff, 0xff, 0xff, 0xff };
	uart_access(&u, 5, false, wide, 4);
	assert_int_equal(wide[1] | wide[2] | wide[3], 0);
	close(p[0]);
	close(p[1]);
}

static void test_cpuid_normalise(void **state)
{
	(void)state;
	unsigned cap = 8;
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + cap * sizeof(c->entries[0]));
	c->nent = 3;
	c->entries[0] = (struct kvm_cpuid_entry2){ .function = 1, .ebx = 0xff00ff00 };
	c->entries[1] = (struct kvm_cpuid_entry2){ .function = 0xb, .index = 0, .edx = 77 };
	c->entries[2] = (struct kvm_cpuid_entry2){ .function = 0xa, .eax = 0x12345678 };
	x86_cpuid_normalise(c, cap, 5, 8);
	assert_int_equal(c->entries[0].ebx >> 24, 5);
	assert_int_equal((c->entries[0].ebx >> 16) & 0xff, 8);
	assert_true(c->entries[0].ecx & (1u << 31));
	assert_int_equal(c->entries[1].edx, 5);
	assert_int_equal(c->entries[2].eax, 0); /* no PMU */
	/* 0xb sub-leaves 1 and 2 appended: 8 cores, then the end of the enumeration. */
	assert_int_equal(c->nent, 5);
	assert_int_equal(c->entries[3].function, 0xb);
	assert_int_equal(c->entries[3].index, 1);
	assert_int_equal(c->entries[3].ebx, 8);
	assert_int_equal(c->entries[3].eax, 3);
	assert_int_equal(c->entries[3].edx, 5);
	assert_int_equal((c->entries[4].ecx >> 8) & 0xff, 0);
	/* No room: nothing appended, nothing overrun. */
	c->nent = 2;
	x86_cpuid_normalise(c, 2, 0, 1);
	assert_int_equal(c->nent, 2);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uart_registers),
		cmocka_unit_test(test_cpuid_normalise),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
