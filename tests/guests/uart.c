/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/uart.c: (--machine) the 8250 as Linux drives it: register read-back, the
 * loopback and FIFO probes, every byte value through THR to stdout unchanged, and the THRE
 * interrupt on IRQ 4 through the in-kernel PIC. Exit 0 = all as documented; n > 0 names the
 * first failed check. Output: "uart bytes:" + bytes 0..255 + "\n", then "uart: irq ok\n". */
#include "tests/guests/guest.h"

#define COM1	 0x3f8
#define IER	 (COM1 + 1)
#define IIR	 (COM1 + 2)
#define LCR	 (COM1 + 3)
#define MCR	 (COM1 + 4)
#define LSR	 (COM1 + 5)
#define MSR	 (COM1 + 6)
#define SCR	 (COM1 + 7)
#define VECTOR	 0x24 /* PIC master base 0x20 + IRQ 4 */
#define WAIT_MAX 100000000ULL

volatile uint32_t uart_isr_count;
volatile uint8_t uart_isr_iir;

/* IRQ 4: read IIR (acknowledges THRE), turn the UART's interrupts off so it fires once,
 * EOI the PIC. */
__asm__(".text\n"
	".globl uart_isr\n"
	"uart_isr:\n"
	"	push %rax\n"
	"	push %rdx\n"
	"	mov $0x3fa, %dx\n"
	"	in %dx, %al\n"
	"	mov %al, uart_isr_iir(%rip)\n"
	"	incl uart_isr_count(%rip)\n"
	"	mov $0x3f9, %dx\n"
	"	xor %eax, %eax\n"
	"	out %al, %dx\n"
	"	mov $0x20, %al\n"
	"	out %al, $0x20\n"
	"	pop %rdx\n"
	"	pop %rax\n"
	"	iretq\n");
void uart_isr(void);

static uint64_t idt[256 * 2] __attribute__((aligned(16)));

static void idt_set(unsigned vec, void (*fn)(void))
{
	uint64_t a = (uint64_t)fn;
	idt[vec * 2] =
		(a & 0xffff) | (0x08ULL << 16) | (0x8eULL << 40) | ((a >> 16 & 0xffff) << 48);
	idt[vec * 2 + 1] = a >> 32;
}

static void pic_init(void)
{
	outb(0x20, 0x11); /* ICW1: edge, cascade, ICW4 */
	outb(0x21, 0x20); /* ICW2: master vectors 0x20.. */
	outb(0x21, 0x04); /* ICW3: slave on IRQ 2 */
	outb(0x21, 0x01); /* ICW4: 8086 mode */
	outb(0xa0, 0x11);
	outb(0xa1, 0x28);
	outb(0xa1, 0x02);
	outb(0xa1, 0x01);
	outb(0x21, 0xef); /* only IRQ 4 */
	outb(0xa1, 0xff);
}

static void put(uint8_t b)
{
	uint64_t n = 0;
	while (!(inb(LSR) & 0x20))
		if (++n > WAIT_MAX)
			guest_exit(90);
	outb(COM1, b);
}

static int probe_registers(void)
{
	outb(LCR, 0x03);
	if (inb(LCR) != 0x03)
		return 1;
	outb(SCR, 0xa5);
	if (inb(SCR) != 0xa5)
		return 2;
	outb(IER, 0x0f);
	if (inb(IER) != 0x0f)
		return 3;
	outb(IER, 0);
	if (inb(IER) != 0)
		return 4;
	/* Loopback: MSR's top nibble mirrors MCR's low one (Linux's autoconfig test). */
	outb(MCR, 0x10 | 0x0a);
	if ((inb(MSR) & 0xf0) != 0x90)
		return 5;
	outb(MCR, 0x0b);
	/* FIFO enabled: IIR bits 7:6 set — what makes Linux say 16550A. */
	outb(IIR, 0x07);
	if ((inb(IIR) & 0xc0) != 0xc0)
		return 6;
	/* Divisor latch behind DLAB, and LSR reports an empty transmitter. */
	outb(LCR, 0x83);
	outb(COM1, 0x01);
	outb(IER, 0x00);
	if (inb(COM1) != 0x01)
		return 7;
	outb(LCR, 0x03);
	if ((inb(LSR) & 0x60) != 0x60)
		return 8;
	return 0;
}

int guest_main(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) idtr = { sizeof(idt) - 1, (uint64_t)idt };

	int r = probe_registers();
	if (r)
		return r;
	for (const char *s = "uart bytes:"; *s; s++)
		put((uint8_t)*s);
	for (unsigned b = 0; b < 256; b++)
		put((uint8_t)b);
	put('\n');

	idt_set(VECTOR, uart_isr);
	__asm__ volatile("lidt %0" : : "m"(idtr));
	pic_init();
	/* Interrupts off at the UART: nothing may arrive. */
	__asm__ volatile("sti");
	for (volatile int i = 0; i < 1000; i++)
		;
	if (uart_isr_count != 0)
		return 20;
	/* Enabling THRI with the THR empty raises IRQ 4 at once; HLT waits for it. */
	outb(IER, 0x02);
	for (uint64_t n = 0; uart_isr_count == 0; n++) {
		if (n > 1000)
			return 21;
		__asm__ volatile("hlt");
	}
	__asm__ volatile("cli");
	if (uart_isr_count != 1)
		return 22;
	if ((uart_isr_iir & 0x0f) != 0x02)
		return 23; /* IIR said "THR empty" */
	if (inb(IER) != 0)
		return 24;
	guest_puts("uart: irq ok\n");
	return 0;
}
