/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/guest.h: the guest side of lib/test_guest_abi.h — port I/O, serial output,
 * exit and timestamp marks — for the freestanding C test guests. */
#ifndef BULKHEAD_TESTS_GUEST_H
#define BULKHEAD_TESTS_GUEST_H

#include "lib/test_guest_abi.h"

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
/* Optional: what vCPUs other than 0 run (index = RDX, ncpus = RCX at their entry); start.S
 * halts when it returns. */
void guest_ap(uint64_t index, uint64_t ncpus);

/* vCPU 0's registers at entry, recorded by start.S before it touches any. */
struct guest_entry {
	uint64_t rdi, rsi, rdx, rcx, rsp, rflags;
};
extern struct guest_entry guest_entry_regs;

static inline void outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline void guest_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid"
			 : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
			 : "a"(leaf), "c"(sub));
}

static inline uint64_t guest_rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

/* Byte-wise compare, no libc. */
static inline int guest_memeq(const void *a, const void *b, uint64_t n)
{
	const uint8_t *x = a, *y = b;
	for (uint64_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

#endif
