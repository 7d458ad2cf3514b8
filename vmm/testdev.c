/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/testdev.c: the test-guest ports — how a freestanding guest talks, stops and times. */
#include "vmm/testdev.h"

#include "lib/mono.h"
#include "lib/vmm_exit.h"
#include "vmm/log.h"
#include "vmm/stopwait.h"

#include <string.h>

#define UART_LSR      5
#define UART_LSR_THRE 0x20 /* transmit holding register empty */
#define UART_LSR_TEMT 0x40 /* transmitter empty */

static void testdev_flush(struct testdev *td)
{
	/* As the UART's: output nobody reads is dropped, and never holds up a stop. */
	stopwait_write(td->vm ? &td->vm->stop : NULL, td->out_fd, td->outbuf, td->outlen);
	td->outlen = 0;
}

static uint32_t le_value(const uint8_t *data, unsigned size)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < size && i < 4; i++)
		v |= (uint32_t)data[i] << (8 * i);
	return v;
}

static void serial_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	struct testdev *td = opaque;

	if (!is_write) {
		/* An always-idle UART: polling "wait for THR empty" loops finish at once. */
		memset(data, addr == UART_LSR ? UART_LSR_THRE | UART_LSR_TEMT : 0, size);
		return;
	}
	if (addr != 0)
		return; /* divisor, LCR, ...: nothing to configure in a sink */
	td->outbuf[td->outlen++] = data[0];
	if (data[0] == '\n' || td->outlen == sizeof(td->outbuf))
		testdev_flush(td);
}

static void exit_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	struct testdev *td = opaque;

	if (!is_write || addr != 0)
		return; /* reads see all-ones; the upper ports only exist for dword writes */
	uint32_t code = le_value(data, size);
	if (code > TG_EXIT_MAX) {
		vmm_log("guest wrote exit code %u, above the maximum %u", code, TG_EXIT_MAX);
		vm_request_stop(td->vm, VMM_EXIT_BAD_CODE);
		return;
	}
	vm_request_stop(td->vm, (int)code);
}

static void mark_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	struct testdev *td = opaque;
	/* Timestamp first: everything after this is overhead we do not want to measure. */
	uint64_t now = mono_ns();

	if (!is_write || addr != 0)
		return;
	if (td->nmarks == TG_MARKS_MAX) {
		td->marks_dropped++;
		return;
	}
	td->marks[td->nmarks++] =
		(struct testdev_mark){ le_value(data, size), now - td->vm->created_ns };
}

/* The MMIO window forwards to the port devices so both paths behave identically. */
static void mmio_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	if (addr == TG_MMIO_SERIAL && size == 1)
		serial_access(opaque, 0, is_write, data, size);
	else if (addr == TG_MMIO_EXIT && size <= 4)
		exit_access(opaque, 0, is_write, data, size);
	else if (addr == TG_MMIO_MARK && size <= 4)
		mark_access(opaque, 0, is_write, data, size);
}

static const struct bus_ops serial_ops = { serial_access };
static const struct bus_ops mmio_ops = { mmio_access };
static const struct bus_ops exit_ops = { exit_access };
static const struct bus_ops mark_ops = { mark_access };

int testdev_init(struct testdev *td, struct vm *vm, int out_fd, bool with_serial)
{
	int err;

	memset(td, 0, sizeof(*td));
	td->vm = vm;
	td->out_fd = out_fd;
	if ((with_serial &&
	     (err = bus_register(&vm->pio, TG_PORT_SERIAL, 8, &serial_ops, td, "serial"))) ||
	    (err = bus_register(&vm->pio, TG_PORT_EXIT, TG_PORT_WIDTH, &exit_ops, td, "exit")) ||
	    (err = bus_register(&vm->pio, TG_PORT_MARK, TG_PORT_WIDTH, &mark_ops, td, "mark")) ||
	    (err = bus_register(&vm->mmio, TG_MMIO_BASE, TG_MMIO_SIZE, &mmio_ops, td,
				"test MMIO"))) {
		vmm_log_setup("cannot register the test-guest ports", -err, NULL);
		return err;
	}
	return 0;
}

void testdev_finish(struct testdev *td)
{
	testdev_flush(td);
	for (unsigned i = 0; i < td->nmarks; i++)
		vmm_log("mark %u %llu", td->marks[i].value, (unsigned long long)td->marks[i].ns);
	if (td->marks_dropped)
		vmm_log("%llu marks dropped (more than %u)", (unsigned long long)td->marks_dropped,
			TG_MARKS_MAX);
}
