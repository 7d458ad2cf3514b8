/* SPDX-License-Identifier: Apache-2.0 */
/* tests/guests/vsock.c: (--machine --virtio-vsock SOCK,cid=3) the ring restart scenarios of
 * tests/guests/vsock_drv.h against bulkhead-vsock, with the host side's echo and stream
 * listeners (vsock-restart-probe serve). Prints "vsock: NAME ok" per scenario, then resets the
 * device, notifies every queue, prints "vsock: idle" and waits a few seconds (the host checks
 * that the back end sits idle meanwhile) before it exits 0; on failure 20 * scenario + the
 * vd_err code. With "vsock=init" on the command line it only brings the device up (DRIVER_OK)
 * and exits 0: for a back end that stops answering there. */
#include "tests/guests/guest.h"
#include "tests/guests/vsock_drv.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/layout.h"

#define VD_AREA_GPA   0x400000ull    /* above the binary, its stacks and the page tables */
#define VD_TSC_BUDGET 30000000000ull /* cycles a wait may take: seconds on any host */
#define VD_TSC_IDLE   10000000000ull /* the idle phase: two seconds or more */

uint32_t vd_plat_read32(uint64_t gpa)
{
	return *(volatile uint32_t *)gpa;
}

void vd_plat_write32(uint64_t gpa, uint32_t v)
{
	*(volatile uint32_t *)gpa = v;
}

void vd_plat_notify(uint64_t base, uint32_t q)
{
	vd_plat_write32(base + 0x050, q); /* QueueNotify: KVM's ioeventfd takes it */
}

void *vd_plat_ptr(uint64_t gpa, uint64_t len)
{
	(void)len; /* identity-mapped RAM; the area lies well inside --mem */
	return (void *)gpa;
}

uint64_t vd_plat_now(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

uint64_t vd_plat_timeout(void)
{
	return VD_TSC_BUDGET;
}

void vd_plat_relax(void)
{
	__asm__ volatile("pause");
}

void vd_plat_say(const char *s)
{
	guest_puts(s);
}

void vd_plat_between(void)
{
	/* The host side looks at the back end's CPU time once the run is over. */
}

/* Whether the kernel command line holds word (whole, space-separated). */
static int cmdline_has(const char *word)
{
	const char *c = (const char *)X86_CMDLINE_GPA;
	for (unsigned i = 0; i < X86_CMDLINE_MAX && c[i]; i++) {
		if (i && c[i - 1] != ' ')
			continue;
		unsigned k = 0;
		while (word[k] && c[i + k] == word[k])
			k++;
		if (!word[k] && (c[i + k] == ' ' || c[i + k] == 0))
			return 1;
	}
	return 0;
}

static struct vd vd;

int guest_main(void)
{
	static const struct {
		const char *name;
		int (*run)(struct vd *v);
	} steps[] = {
		{ "basic", vd_scenario_basic },
		{ "toggle", vd_scenario_toggle },
		{ "reset", vd_scenario_reset },
		{ "reset-busy", vd_scenario_reset_busy },
	};
	if (vd_probe(&vd, X86_VIRTIO_MMIO_GPA, 8, VD_AREA_GPA))
		return VD_E_NODEV;
	if (cmdline_has("vsock=init"))
		return vd_init(&vd);
	for (unsigned i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int err = steps[i].run(&vd);
		if (err)
			return (int)(20 * i) + err;
		guest_puts("vsock: ");
		guest_puts(steps[i].name);
		guest_puts(" ok\n");
	}
	vd_reset(&vd);
	for (uint32_t q = 0; q < 3; q++)
		vd_plat_notify(vd.base, q);
	guest_puts("vsock: idle\n");
	for (uint64_t t0 = vd_plat_now(); vd_plat_now() - t0 < VD_TSC_IDLE;)
		vd_plat_relax();
	return 0;
}
