/* SPDX-License-Identifier: Apache-2.0 */
/* cli/bench.c: `bulkhead bench boot` — boots the engine N times with the command `true` and
 * times each boot's phases from outside: engine start-up (spawn to the kernel's first console
 * byte) and kernel (first byte to "Run /init as init process"), plus bulkhead-vmm's own
 * boot-timer line when init gets to write it (lib/boot_timer_abi.h). */
#include "cli/bench.h"

#include "lib/mono.h"
#include "session/paths.h"
#include "session/engine.h"
#include "session/exit_codes.h"
#include "session/kvm_probe.h"
#include "lib/boot_args.h"
#include "lib/boot_timer_abi.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_RUNS	 1000
#define BENCH_BOOT_LIMIT 600000 /* ms: one boot may take minutes where ring 0 is emulated */
#define BENCH_INIT_LINE	 "Run /init as init process"
#define BENCH_TAIL	 8192

enum { PH_SETUP, PH_KERNEL, PH_TOTAL, PH_VMM_INIT, PH_N };
static const char *const ph_names[PH_N] = { "start-up", "kernel", "total", "vmm-to-init" };
static const char *const ph_desc[PH_N] = {
	"spawn -> first console byte",
	"first console byte -> 'Run /init'",
	"spawn -> 'Run /init'",
	"bulkhead-vmm first KVM_RUN -> init's boot-timer write",
};

static const char bench_usage[] =
	"usage: bulkhead bench boot [-n N] [--engine auto|kvm|qemu] [--json]\n"
	"\n"
	"Boots the guest N times (default 10) running `true`, and prints min/p50/p90/p99 of\n"
	"each phase in milliseconds: start-up (spawn to the kernel's first console byte),\n"
	"kernel (to 'Run /init as init process'), total, and with the kvm engine the VMM's\n"
	"boot-timer (first KVM_RUN to init's first act) when init gets that far.\n";

static uint64_t now_ns(void)
{
	return mono_ns();
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t bench_quantile(uint64_t *v, size_t n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(v[0]), cmp_u64);
	size_t rank = (size_t)(q * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

/* Appends buf to a bounded text tail and reports whether `needle` is now in it. */
static bool tail_find(char *tail, size_t *len, const char *buf, size_t n, const char *needle)
{
	for (size_t i = 0; i < n; i++) {
		if (*len == BENCH_TAIL - 1) {
			memmove(tail, tail + BENCH_TAIL / 2, *len - BENCH_TAIL / 2);
			*len -= BENCH_TAIL / 2;
		}
		tail[(*len)++] = buf[i] ? buf[i] : ' ';
	}
	tail[*len] = '\0';
	return strstr(tail, needle) != NULL;
}

/* One boot: fills ns[PH_*] (0 = not measured). Returns 0, or -1 with err set. */
static int bench_one(const struct launch *tmpl, const struct engine_choice *c, uint64_t ns[PH_N],
		     char *err, size_t errlen)
{
	struct launch l = *tmpl;
	struct vm_proc g;
	int diag[2];
	char con_tail[BENCH_TAIL] = "", diag_tail[BENCH_TAIL] = "";
	size_t con_len = 0, diag_len = 0;
	uint64_t first = 0, init = 0;
	int rc = -1;

	memset(ns, 0, PH_N * sizeof(ns[0]));
	memset(&g, 0, sizeof(g));
	if (pipe2(diag, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	l.diag_w = diag[1];
	uint64_t t0 = now_ns();
	int started = c->ops->start(&l, c, &g, err, errlen);
	close(diag[1]);
	if (started < 0) {
		close(diag[0]);
		return -1;
	}
	bool con_open = true, diag_open = true;
	while (con_open && !init) {
		struct pollfd p[2] = { { g.console_fd, POLLIN, 0 },
				       { diag_open ? diag[0] : -1, POLLIN, 0 } };
		uint64_t waited = (now_ns() - t0) / 1000000;
		if (waited >= BENCH_BOOT_LIMIT) {
			snprintf(err, errlen, "no '%s' within %d s", BENCH_INIT_LINE,
				 BENCH_BOOT_LIMIT / 1000);
			goto out;
		}
		if (poll(p, 2, (int)(BENCH_BOOT_LIMIT - waited)) < 0 && errno != EINTR)
			break;
		char buf[4096];
		if (p[0].revents) {
			ssize_t n = read(g.console_fd, buf, sizeof(buf));
			uint64_t t = now_ns();
			if (n <= 0) {
				con_open = false;
			} else {
				if (!first)
					first = t;
				if (tail_find(con_tail, &con_len, buf, (size_t)n, BENCH_INIT_LINE))
					init = t;
			}
		}
		if (diag_open && p[1].revents) {
			ssize_t n = read(diag[0], buf, sizeof(buf));
			if (n <= 0)
				diag_open = false;
			else
				tail_find(diag_tail, &diag_len, buf, (size_t)n, "");
		}
	}
	if (!init) {
		snprintf(err, errlen, "the guest stopped before '%s'", BENCH_INIT_LINE);
		goto out;
	}
	ns[PH_SETUP] = first - t0;
	ns[PH_KERNEL] = init - first;
	ns[PH_TOTAL] = init - t0;
	rc = 0;
out:
	kill(-g.pid, SIGKILL);
	kill(g.pid, SIGKILL);
	waitpid(g.pid, NULL, 0);
	/* Drain what the VMM said: its boot-timer line comes if init ran (native hosts). */
	char buf[4096];
	ssize_t n;
	while (diag_open && (n = read(diag[0], buf, sizeof(buf))) > 0)
		tail_find(diag_tail, &diag_len, buf, (size_t)n, "");
	const char *bt = strstr(diag_tail, BOOT_TIMER_LINE_PREFIX);
	unsigned long long m, vc, fr, in;
	if (bt &&
	    sscanf(bt + strlen(BOOT_TIMER_LINE_PREFIX),
		   "main=%llu vm_create=%llu first_run=%llu init=%llu", &m, &vc, &fr, &in) == 4 &&
	    in > fr)
		ns[PH_VMM_INIT] = in - fr;
	close(diag[0]);
	close(g.console_fd);
	return rc;
}

static void print_table(uint64_t *v[PH_N], size_t n, bool json, const struct engine_choice *c,
			bool emulated)
{
	if (json) {
		printf("{\"engine\":\"%s\",\"runs\":%zu,\"guest_kernel_mode_emulated\":%s,"
		       "\"unit\":\"ms\",\"phases\":{",
		       engine_name(c->kind), n, emulated ? "true" : "false");
		bool comma = false;
		for (int p = 0; p < PH_N; p++) {
			size_t k = 0;
			for (size_t i = 0; i < n; i++)
				if (v[p][i])
					v[p][k++] = v[p][i];
			if (!k)
				continue;
			printf("%s\"%s\":{\"n\":%zu,\"min\":%.3f,\"p50\":%.3f,\"p90\":%.3f,"
			       "\"p99\":%.3f}",
			       comma ? "," : "", ph_names[p], k, bench_quantile(v[p], k, 0) / 1e6,
			       bench_quantile(v[p], k, 0.5) / 1e6,
			       bench_quantile(v[p], k, 0.9) / 1e6,
			       bench_quantile(v[p], k, 0.99) / 1e6);
			comma = true;
		}
		printf("}}\n");
		return;
	}
	if (emulated)
		printf("NOTE: this host's KVM emulates guest kernel mode (see 'bulkhead doctor'); "
		       "%s\n",
		       c->kind == ENGINE_KVM ? "the kernel phase measures the host's emulator, not "
					       "bulkhead-vmm."
		       : c->qemu_accel_kvm   ? "QEMU runs on it."
					     : "QEMU runs under TCG (software emulation) here.");
	printf("engine %s (%s), %zu boots, milliseconds\n", engine_name(c->kind), c->why, n);
	printf("%-12s %10s %10s %10s %10s  %s\n", "phase", "min", "p50", "p90", "p99", "what");
	for (int p = 0; p < PH_N; p++) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (v[p][i])
				v[p][k++] = v[p][i];
		if (!k) {
			printf("%-12s %10s %10s %10s %10s  %s (not reached)\n", ph_names[p], "-",
			       "-", "-", "-", ph_desc[p]);
			continue;
		}
		printf("%-12s %10.2f %10.2f %10.2f %10.2f  %s\n", ph_names[p],
		       bench_quantile(v[p], k, 0) / 1e6, bench_quantile(v[p], k, 0.5) / 1e6,
		       bench_quantile(v[p], k, 0.9) / 1e6, bench_quantile(v[p], k, 0.99) / 1e6,
		       ph_desc[p]);
	}
}

static int bench_boot(int argc, char **argv)
{
	enum engine_kind kind = ENGINE_AUTO;
	unsigned runs = 10;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			char *end;
			unsigned long v = strtoul(argv[++i], &end, 10);
			if (*end || v < 1 || v > BENCH_MAX_RUNS) {
				fprintf(stderr, "bulkhead bench boot: -n %s: want 1..%d\n", argv[i],
					BENCH_MAX_RUNS);
				return EXIT_BULKHEAD;
			}
			runs = (unsigned)v;
		} else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) {
			if (engine_parse(argv[++i], &kind) < 0) {
				fprintf(stderr,
					"bulkhead bench boot: --engine %s: want auto, kvm or "
					"qemu\n",
					argv[i]);
				return EXIT_BULKHEAD;
			}
		} else if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(bench_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "bulkhead bench boot: unknown argument '%s' (see --help)\n",
				argv[i]);
			return EXIT_BULKHEAD;
		}
	}

	struct engine_choice c;
	if (engine_choose(kind, &c) < 0) {
		fprintf(stderr, "bulkhead bench boot: engine %s: %s\n", engine_name(kind), c.why);
		return EXIT_BULKHEAD;
	}
	struct kvm_caps caps;
	kvm_probe(true, &caps);
	bool emulated = caps.kernel_native == PROBE_NO;

	char kernel[PATH_MAX], initrd[PATH_MAX], cmdline[BOOT_ARGS_CMDLINE_MAX];
	paths_join(kernel, sizeof(kernel), paths_libdir(), PATHS_GUEST_KERNEL);
	/* The base image: this measures the engine and the kernel, not the size of the tools. */
	paths_join(initrd, sizeof(initrd), paths_libdir(), "initramfs-base.cpio");
	/* Not quiet: the console's "Run /init" line is the end mark for every engine. */
	if (engine_cmdline(&c, false, NULL, false, cmdline, sizeof(cmdline)) < 0)
		return EXIT_BULKHEAD;
	struct launch l = { .kernel = kernel,
			    .initrd = initrd,
			    .cmdline = cmdline,
			    .mem_mib = 256,
			    .cpus = 1,
			    .diag_w = -1,
			    .restore_fd = -1,
			    .snapshot_fd = -1 };

	uint64_t *v[PH_N];
	for (int p = 0; p < PH_N; p++)
		v[p] = calloc(runs, sizeof(uint64_t));
	signal(SIGPIPE, SIG_IGN);
	int code = 0;
	for (unsigned i = 0; i < runs; i++) {
		uint64_t ns[PH_N];
		char err[256];
		if (bench_one(&l, &c, ns, err, sizeof(err)) < 0) {
			fprintf(stderr, "bulkhead bench boot: boot %u: %s\n", i + 1, err);
			code = EXIT_BULKHEAD;
			runs = i;
			break;
		}
		for (int p = 0; p < PH_N; p++)
			v[p][i] = ns[p];
	}
	if (runs)
		print_table(v, runs, json, &c, emulated);
	for (int p = 0; p < PH_N; p++)
		free(v[p]);
	return code;
}

int cmd_bench(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "boot") == 0)
		return bench_boot(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs(bench_usage, stdout);
		return 0;
	}
	fprintf(stderr, "bulkhead bench: want 'boot' (see 'bulkhead bench --help')\n");
	return EXIT_BULKHEAD;
}
