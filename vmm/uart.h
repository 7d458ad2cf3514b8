/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/uart.h: an 8250/16550A UART — the guest's console. Transmitted bytes go to an output
 * fd byte-exact; interrupts reach the guest on one GSI of the in-kernel irqchip. */
#ifndef BULKHEAD_VMM_UART_H
#define BULKHEAD_VMM_UART_H

#include "vmm/vm.h"

#include <stddef.h>
#include <stdint.h>

struct uart {
	struct vm *vm;
	int out_fd;
	unsigned gsi;
	uint8_t ier, lcr, mcr, scr, dll, dlm, fcr;
	bool thr_ipending; /* "THR empty" interrupt raised and not yet acknowledged */
	bool irq_level;	   /* what we last told the irqchip */
	size_t outlen;
	uint8_t outbuf[4096];
	uint64_t tx_bytes;
};

/* Registers the UART's 8 byte registers at `base` on `bus` (x86: COM1's ports on vm->pio;
 * arm64: an MMIO page on vm->mmio). Set-up tier. */
int uart_init(struct uart *u, struct vm *vm, struct bus *bus, uint64_t base, unsigned gsi,
	      int out_fd);

/* Writes out whatever is buffered. */
void uart_flush(struct uart *u);

/* What a snapshot keeps of the UART: its registers and interrupt state. */
struct uart_state {
	uint8_t ier, lcr, mcr, scr, dll, dlm, fcr, thr_ipending, irq_level;
	uint8_t pad[7];
};
/* Flushes the output first: whatever the guest sent before a snapshot is out. */
void uart_save(struct uart *u, struct uart_state *s);
/* Whether s is a state the guest's own writes could have left: reserved bits clear, the
 * interrupt line what IER and the pending THRE make it, pad zero. 0 or -EINVAL. */
int uart_state_check(const struct uart_state *s);
/* uart_state_check, then the registers; -EINVAL leaves u as it was. */
int uart_restore(struct uart *u, const struct uart_state *s);

/* The register model, for unit tests: one port access at offset 0..7. */
void uart_access(void *opaque, uint64_t addr, bool is_write, uint8_t *data, unsigned size);

#endif
