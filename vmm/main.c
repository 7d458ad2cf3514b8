/* vmm/main.c: bulkhead-vmm's entry — parse options, then acquire, run and release in order.
 * Today: --test-guest mode (flat freestanding binaries); issue 3 adds Linux boot. */
#include "vmm/exit_status.h"
#include "vmm/loader_flat.h"
#include "vmm/log.h"
#include "vmm/test_guest_abi.h"
#include "vmm/testdev.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"
#include "vmm/x86/layout.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VMM_MEM_MIB_DEFAULT 16
#define VMM_MEM_MIB_MIN	    2 /* the image loads at 1 MiB */
#define VMM_MEM_MIB_MAX	    (X86_RAM_MAX_BELOW_4G >> 20)
#define VMM_TIMEOUT_MS_MAX  (24ULL * 3600 * 1000)

struct vmm_opts {
	const char *test_guest;
	uint64_t mem_mib;
	uint64_t timeout_ms;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bulkhead-vmm --test-guest FILE [--mem MIB] [--timeout-ms N]\n"
		"\n"
		"Runs a flat freestanding binary in a fresh KVM VM, entered in 64-bit mode\n"
		"at 0x%x (ABI: vmm/test_guest_abi.h). Serial output goes to stdout.\n"
		"\n"
		"  --test-guest FILE  the flat binary to run\n"
		"  --mem MIB          guest RAM, %u..%llu MiB (default %u)\n"
		"  --timeout-ms N     stop the guest after N ms (default 0: never)\n"
		"\n"
		"Exit status (vmm/exit_status.h):\n"
		"  0..%u  the guest's own code, written to port 0x%x\n"
		"  %d    guest halted            %d  guest shut down (triple fault)\n"
		"  %d    KVM internal error      %d  KVM entry failure\n"
		"  %d    exit code out of range  %d  unexpected exit\n"
		"  %d    timeout                 %d  bulkhead-vmm failed (one line on stderr)\n",
		TG_LOAD_GPA, VMM_MEM_MIB_MIN, (unsigned long long)VMM_MEM_MIB_MAX,
		VMM_MEM_MIB_DEFAULT, TG_EXIT_MAX, TG_PORT_EXIT, VMM_EXIT_HALTED, VMM_EXIT_SHUTDOWN,
		VMM_EXIT_INTERNAL_ERROR, VMM_EXIT_FAIL_ENTRY, VMM_EXIT_BAD_CODE,
		VMM_EXIT_UNEXPECTED, VMM_EXIT_TIMEOUT, VMM_EXIT_SETUP);
}

/* Strict decimal: no sign, no junk, within [min, max]. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct vmm_opts *o)
{
	enum { OPT_TEST_GUEST = 256, OPT_MEM, OPT_TIMEOUT_MS, OPT_HELP };
	static const struct option longopts[] = {
		{ "test-guest", required_argument, NULL, OPT_TEST_GUEST },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->test_guest = NULL;
	o->mem_mib = VMM_MEM_MIB_DEFAULT;
	o->timeout_ms = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_TEST_GUEST:
			o->test_guest = optarg;
			break;
		case OPT_MEM:
			if (parse_u64(optarg, VMM_MEM_MIB_MIN, VMM_MEM_MIB_MAX, &o->mem_mib)) {
				fprintf(stderr,
					"bulkhead-vmm: --mem %s: want a whole number of MiB, "
					"%u..%llu\n",
					optarg, VMM_MEM_MIB_MIN,
					(unsigned long long)VMM_MEM_MIB_MAX);
				return -1;
			}
			break;
		case OPT_TIMEOUT_MS:
			if (parse_u64(optarg, 0, VMM_TIMEOUT_MS_MAX, &o->timeout_ms)) {
				fprintf(stderr,
					"bulkhead-vmm: --timeout-ms %s: want milliseconds, "
					"0..%llu\n",
					optarg, (unsigned long long)VMM_TIMEOUT_MS_MAX);
				return -1;
			}
			break;
		case 'h':
		case OPT_HELP:
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr,
				"bulkhead-vmm: unknown or incomplete option %s; see --help\n",
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bulkhead-vmm: unexpected argument %s; see --help\n", argv[optind]);
		return -1;
	}
	if (!o->test_guest) {
		fprintf(stderr,
			"bulkhead-vmm: nothing to run: give --test-guest FILE; see --help\n");
		return -1;
	}
	return 0;
}

static int run_test_guest(const struct vmm_opts *o)
{
	struct vm vm;
	struct testdev td;
	struct vcpu vcpu;
	int status = VMM_EXIT_SETUP;

	if (vm_create(&vm, o->mem_mib << 20))
		return VMM_EXIT_SETUP;
	if (testdev_init(&td, &vm, STDOUT_FILENO))
		goto out_vm;
	if (loader_flat_load(&vm.mem, o->test_guest, TG_LOAD_GPA, NULL))
		goto out_vm;
	if (vcpu_create(&vcpu, &vm, 0))
		goto out_vm;
	if (vcpu_arch_cpuid(&vcpu) ||
	    vcpu_arch_boot64(&vcpu, TG_LOAD_GPA, TG_STACK_TOP, TG_ABI_VERSION))
		goto out_vcpu;

	status = vcpu_run(&vcpu, o->timeout_ms);

	testdev_finish(&td);
	if (vm.pio.unknown_reads || vm.pio.unknown_writes || vm.mmio.unknown_reads ||
	    vm.mmio.unknown_writes)
		vmm_log("unknown accesses: port %llu reads, %llu writes; MMIO %llu reads, %llu "
			"writes",
			(unsigned long long)vm.pio.unknown_reads,
			(unsigned long long)vm.pio.unknown_writes,
			(unsigned long long)vm.mmio.unknown_reads,
			(unsigned long long)vm.mmio.unknown_writes);
out_vcpu:
	vcpu_destroy(&vcpu);
out_vm:
	vm_destroy(&vm);
	return status;
}

int main(int argc, char **argv)
{
	struct vmm_opts o;

	if (parse_args(argc, argv, &o))
		return VMM_EXIT_SETUP;
	return run_test_guest(&o);
}
