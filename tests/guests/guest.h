/* tests/guests/guest.h: the guest side of vmm/test_guest_abi.h — port I/O, serial output,
 * exit and timestamp marks — for the freestanding C test guests. */
#ifndef BULKHEAD_TESTS_GUEST_H
#define BULKHEAD_TESTS_GUEST_H

#include "vmm/test_guest_abi.h"

#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;
	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void guest_putc(char c)
{
	outb(TG_PORT_SERIAL, (uint8_t)c);
}

static inline void guest_puts(const char *s)
{
	while (*s)
		guest_putc(*s++);
}

/* Decimal, no libc: enough for counts and codes. */
static inline void guest_putu(uint64_t v)
{
	char buf[21];
	int i = sizeof(buf);
	buf[--i] = '\0';
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	guest_puts(&buf[i]);
}

static inline void guest_mark(uint32_t value)
{
	outl(TG_PORT_MARK, value);
}

static inline __attribute__((noreturn)) void guest_exit(uint32_t code)
{
	outl(TG_PORT_EXIT, code);
	for (;;)
		__asm__ volatile("cli; hlt");
}

/* Each C guest defines this; start.S passes its return value to guest_exit(). */
int guest_main(void);

#endif
