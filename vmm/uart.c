/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/uart.c: the 8250/16550A register model. Transmission is instant (the THR is always
 * empty again by the next access), reception is idle (no input yet), the modem lines loop
 * back in MCR loopback mode so Linux's probe recognises the chip. */
#include "vmm/uart.h"

#include "vmm/log.h"
#include "vmm/stopwait.h"

#include <errno.h>
#include <string.h>

/* Register offsets (DLAB = LCR bit 7 selects the divisor latch at 0 and 1). */
#define UART_RBR_THR 0
#define UART_IER     1
#define UART_IIR_FCR 2
#define UART_LCR     3
#define UART_MCR     4
#define UART_LSR     5
#define UART_MSR     6
#define UART_SCR     7

#define UART_LCR_DLAB	0x80
#define UART_IER_RDI	0x01
#define UART_IER_THRI	0x02
#define UART_IER_MASK	0x0f
#define UART_IIR_NO_INT 0x01
#define UART_IIR_THRI	0x02
#define UART_IIR_FIFO	0xc0 /* FIFOs enabled: what marks a 16550A */
#define UART_FCR_ENABLE 0x01
#define UART_FCR_CLEAR	0x06 /* clear RX/TX FIFO: self-clearing bits */
#define UART_MCR_LOOP	0x10
#define UART_MCR_MASK	0x1f
#define UART_LSR_THRE	0x20
#define UART_LSR_TEMT	0x40
#define UART_MSR_DCD	0x80
#define UART_MSR_RI	0x40
#define UART_MSR_DSR	0x20
#define UART_MSR_CTS	0x10

void uart_flush(struct uart *u)
{
	/* A reader that is gone or stopped reading (and the VM stopping) loses the output; the
	 * guest keeps running, and a stop is never held up here. */
	stopwait_write(u->vm ? &u->vm->stop : NULL, u->out_fd, u->outbuf, u->outlen);
	u->outlen = 0;
}

/* The line follows the pending state (level semantics on our side; the PIC and IOAPIC see
 * the rising edge they expect for an ISA interrupt). */
static void uart_update_irq(struct uart *u)
{
	bool level = (u->ier & UART_IER_THRI) && u->thr_ipending;
	if (level == u->irq_level)
		return;
	u->irq_level = level;
	if (u->vm)
		vm_irq_line(u->vm, u->gsi, level);
}

static void uart_tx(struct uart *u, uint8_t byte)
{
	u->outbuf[u->outlen++] = byte;
	u->tx_bytes++;
	/* Line-buffered: a console line (or a full buffer) per write(2), not a byte. */
	if (byte == '\n' || u->outlen == sizeof(u->outbuf))
		uart_flush(u);
	/* Sent at once: the THR is empty again, which raises its interrupt if enabled. */
	u->thr_ipending = true;
}

static uint8_t uart_msr(const struct uart *u)
{
	if (!(u->mcr & UART_MCR_LOOP))
		return UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS; /* a cable is attached */
	/* Loopback: DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD. */
	return (uint8_t)(((u->mcr & 0x01) ? UART_MSR_DSR : 0) |
			 ((u->mcr & 0x02) ? UART_MSR_CTS : 0) |
			 ((u->mcr & 0x04) ? UART_MSR_RI : 0) |
			 ((u->mcr & 0x08) ? UART_MSR_DCD : 0));
}

static uint8_t uart_read(struct uart *u, unsigned reg)
{
	uint8_t iir;
	switch (reg) {
	case UART_RBR_THR:
		return (u->lcr & UART_LCR_DLAB) ? u->dll : 0; /* no input yet */
	case UART_IER:
		return (u->lcr & UART_LCR_DLAB) ? u->dlm : u->ier;
	case UART_IIR_FCR:
		iir = (u->fcr & UART_FCR_ENABLE) ? UART_IIR_FIFO : 0;
		if ((u->ier & UART_IER_THRI) && u->thr_ipending) {
			/* Reading IIR while it reports THRE acknowledges that interrupt. */
			u->thr_ipending = false;
			uart_update_irq(u);
			return iir | UART_IIR_THRI;
		}
		return iir | UART_IIR_NO_INT;
	case UART_LCR:
		return u->lcr;
	case UART_MCR:
		return u->mcr;
	case UART_LSR:
		return UART_LSR_THRE | UART_LSR_TEMT;
	case UART_MSR:
		return uart_msr(u);
	default:
		return u->scr;
	}
}

static void uart_write(struct uart *u, unsigned reg, uint8_t v)
{
	switch (reg) {
	case UART_RBR_THR:
		if (u->lcr & UART_LCR_DLAB) {
			u->dll = v;
			return;
		}
		/* Writing THR acknowledges THRE: lower the line, so that the THR emptying
		 * again below is a fresh rising edge (ISA interrupts are edge-triggered). */
		u->thr_ipending = false;
		uart_update_irq(u);
		if (!(u->mcr & UART_MCR_LOOP))
			uart_tx(u, v);
		else
			u->thr_ipending = true; /* looped back: nothing leaves the chip */
		break;
	case UART_IER:
		if (u->lcr & UART_LCR_DLAB) {
			u->dlm = v;
			return;
		}
		/* Enabling THRI with the THR empty raises it at once (Linux's startup test
		 * relies on that; without it the driver falls back to polling). */
		if (!(u->ier & UART_IER_THRI) && (v & UART_IER_THRI))
			u->thr_ipending = true;
		u->ier = v & UART_IER_MASK;
		/* The tty layer turns THRI off when it has nothing left: a burst ended. */
		if (!(u->ier & UART_IER_THRI))
			uart_flush(u);
		break;
	case UART_IIR_FCR:
		u->fcr = v & (uint8_t)~UART_FCR_CLEAR;
		break;
	case UART_LCR:
		u->lcr = v;
		break;
	case UART_MCR:
		u->mcr = v & UART_MCR_MASK;
		break;
	case UART_LSR:
	case UART_MSR:
		break; /* read-only */
	default:
		u->scr = v;
		break;
	}
	uart_update_irq(u);
}

void uart_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size)
{
	struct uart *u = opaque;
	/* Byte registers: wider accesses act on the first byte (the rest reads as zero). */
	if (is_write) {
		uart_write(u, (unsigned)addr & 7, data[0]);
		return;
	}
	memset(data, 0, size);
	data[0] = uart_read(u, (unsigned)addr & 7);
}

void uart_save(struct uart *u, struct uart_state *s)
{
	uart_flush(u);
	*s = (struct uart_state){ .ier = u->ier,
				  .lcr = u->lcr,
				  .mcr = u->mcr,
				  .scr = u->scr,
				  .dll = u->dll,
				  .dlm = u->dlm,
				  .fcr = u->fcr,
				  .thr_ipending = u->thr_ipending,
				  .irq_level = u->irq_level };
}

int uart_state_check(const struct uart_state *s)
{
	static const uint8_t zero[sizeof(s->pad)];
	bool level = (s->ier & UART_IER_THRI) && s->thr_ipending;
	if (s->thr_ipending > 1 || s->irq_level != level || (s->ier & ~UART_IER_MASK) ||
	    (s->mcr & ~UART_MCR_MASK) || (s->fcr & UART_FCR_CLEAR) ||
	    memcmp(s->pad, zero, sizeof(zero)))
		return -EINVAL;
	return 0;
}

int uart_restore(struct uart *u, const struct uart_state *s)
{
	if (uart_state_check(s))
		return -EINVAL;
	u->ier = s->ier;
	u->lcr = s->lcr;
	u->mcr = s->mcr;
	u->scr = s->scr;
	u->dll = s->dll;
	u->dlm = s->dlm;
	u->fcr = s->fcr;
	u->thr_ipending = s->thr_ipending;
	u->irq_level = s->irq_level; /* the irqchip's own state comes back with it */
	return 0;
}

static const struct bus_ops uart_ops = { uart_access };

int uart_init(struct uart *u, struct vm *vm, struct bus *bus, uint64_t base, unsigned gsi,
	      int out_fd)
{
	memset(u, 0, sizeof(*u));
	u->vm = vm;
	u->out_fd = out_fd;
	u->gsi = gsi;
	u->mcr = 0x08; /* OUT2: how a PC routes the UART's interrupt to the PIC */
	int err = bus_register(bus, base, 8, &uart_ops, u, "uart");
	if (err)
		vmm_log_setup("cannot register the UART's registers", -err, NULL);
	return err;
}
