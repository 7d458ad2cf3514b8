/* SPDX-License-Identifier: Apache-2.0 */
/* session/kvm_probe.c: what this host's KVM can run, found by running the tiny probe guests
 * (tests/guests/) under bulkhead-vmm: usable at all, guest kernel mode native or emulated
 * (a timed loop), a ring-3 syscall that lands in ring 0. */
#include "session/kvm_probe.h"

#include "session/paths.h"
#include "lib/mono.h"
#include "lib/vmm_exit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#if defined(__aarch64__)
#define KVM_PROBE_ARM64 1
#else
#define KVM_PROBE_ARM64 0
#endif

/* Ring 0 runs at >1000 M instr/s natively and ~1.5 M/s where it is emulated (kvm_pvm): the
 * threshold sits ~25x from either side, so neither a busy native host nor a faster emulator
 * is misread. */
#define DOCTOR_NATIVE_MIPS 40.0

/* Generous: the loop probe takes under a second even where ring 0 is emulated. */
#define DOCTOR_LOOP_TIMEOUT_MS	20000
#define DOCTOR_RING3_TIMEOUT_MS 5000
#define DOCTOR_EXEC_GRACE_MS	5000 /* on top of the VMM's own timeout, before SIGKILL */

static void set_why(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (why[0])
		return; /* the first failure is the one worth reporting */
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static void drain(int *fd, char *buf, size_t cap, size_t *len)
{
	char tmp[4096];
	ssize_t n = read(*fd, tmp, sizeof(tmp));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	/* Keep what fits (NUL-terminated); read the rest anyway so the child never blocks. */
	size_t keep = (size_t)n;
	if (keep > cap - 1 - *len)
		keep = cap - 1 - *len;
	memcpy(buf + *len, tmp, keep);
	*len += keep;
	buf[*len] = '\0';
}

/* Runs argv with stdin from /dev/null, capturing stdout and stderr; kills it after
 * limit_ms. Returns 0 (see r->status), or -errno when it could not be started. */
int probe_exec(char *const argv[], unsigned limit_ms, struct probe_run *r)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc;

	memset(r, 0, sizeof(*r));
	r->status = -1;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		rc = -errno;
		goto close_pipes;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	rc = -posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	close(err[1]);
	out[1] = err[1] = -1;
	if (rc)
		goto close_pipes;

	uint64_t deadline = mono_ms() + limit_ms;
	bool killed = false;
	while (out[0] >= 0 || err[0] >= 0) {
		struct pollfd p[2] = { { out[0], POLLIN, 0 }, { err[0], POLLIN, 0 } };
		uint64_t now = mono_ms();
		if (now >= deadline && !killed) {
			kill(pid, SIGKILL);
			killed = true;
			deadline = now + 1000; /* then give up on the pipes */
		} else if (now >= deadline) {
			break;
		}
		if (poll(p, 2, (int)(deadline - now)) < 0 && errno != EINTR)
			break;
		if (out[0] >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			drain(&out[0], r->out, sizeof(r->out), &r->outlen);
		if (err[0] >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			drain(&err[0], r->err, sizeof(r->err), &r->errlen);
	}
	int ws;
	while (waitpid(pid, &ws, 0) < 0) {
		if (errno != EINTR) {
			ws = 0;
			break;
		}
	}
	if (WIFEXITED(ws))
		r->status = WEXITSTATUS(ws);
	else if (WIFSIGNALED(ws))
		r->sig = WTERMSIG(ws);
	rc = 0;
close_pipes:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return rc;
}

/* The first stderr line that is not a timestamp mark: what to show when a probe fails. */
static void first_err_line(const struct probe_run *r, char *buf, size_t len)
{
	const char *p = r->err;
	buf[0] = '\0';
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n && strncmp(p, "bulkhead-vmm: mark ", 19) != 0) {
			snprintf(buf, len, "%.*s", (int)n, p);
			return;
		}
		p += n + (nl ? 1 : 0);
	}
}

/* Runs one probe guest; returns 0 with r filled, or -1 with why set. */
static int doctor_run_probe(const char *guest, unsigned timeout_ms, struct probe_run *r, char *why,
			    size_t whylen)
{
	char vmm[PATH_MAX], image[PATH_MAX], guests[PATH_MAX], tmo[32];

	if (paths_join(vmm, sizeof(vmm), paths_bindir(), "bulkhead-vmm") ||
	    paths_join(guests, sizeof(guests), paths_libdir(), "guests") ||
	    paths_join(image, sizeof(image), guests, guest)) {
		set_why(why, whylen, "install path too long");
		return -1;
	}
	if (access(vmm, X_OK) < 0) {
		set_why(why, whylen, "%s: %s (run make)", vmm, strerror(errno));
		return -1;
	}
	if (access(image, R_OK) < 0) {
		set_why(why, whylen, "probe guest %s: %s (run make)", image, strerror(errno));
		return -1;
	}
	snprintf(tmo, sizeof(tmo), "%u", timeout_ms);
	char *const argv[] = { vmm, "--test-guest", image, "--timeout-ms", tmo, NULL };
	int rc = probe_exec(argv, timeout_ms + DOCTOR_EXEC_GRACE_MS, r);
	if (rc) {
		set_why(why, whylen, "cannot start %s: %s", vmm, strerror(-rc));
		return -1;
	}
	if (r->status < 0) {
		set_why(why, whylen, "bulkhead-vmm died on signal %d running %s", r->sig, guest);
		return -1;
	}
	return 0;
}

/* /dev/kvm opens, speaks API 12 and creates a VM: checked here, directly, so that the
 * reason is exact when it does not. */
/* arm64: the vGIC a VM can have (v3 first, as bulkhead-vmm asks) and PSCI 0.2, asked of the
 * VM doctor_check_kvm made. There is no paravirtual KVM on arm64 (guest EL1 and EL0 run in
 * hardware), so the x86 probe guests have nothing to find there. */
static void arm64_facts(int vm, struct kvm_caps *out)
{
	static const struct {
		unsigned type;
		const char *name;
	} gics[] = { { KVM_DEV_TYPE_ARM_VGIC_V3, "v3" }, { KVM_DEV_TYPE_ARM_VGIC_V2, "v2" } };
	for (size_t i = 0; i < sizeof(gics) / sizeof(gics[0]) && !out->gic[0]; i++) {
		struct kvm_create_device d = { .type = gics[i].type, .flags = KVM_CREATE_DEVICE_TEST };
		if (ioctl(vm, KVM_CREATE_DEVICE, &d) == 0)
			snprintf(out->gic, sizeof(out->gic), "%s", gics[i].name);
	}
	out->psci_0_2 = ioctl(vm, KVM_CHECK_EXTENSION, KVM_CAP_ARM_PSCI_0_2) > 0;
}

/* The module, and /dev/kvm open with the right API; the descriptor, or -1 with why set. */
static int open_kvm(struct kvm_caps *out)
{
#if defined(__aarch64__)
	static const char *const modules[] = { "kvm" }; /* built in, on Debian's arm64 kernels */
#else
	static const char *const modules[] = { "kvm_pvm", "kvm_intel", "kvm_amd" };
#endif
	char path[64];

	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
		snprintf(path, sizeof(path), "/sys/module/%s", modules[i]);
		if (access(path, F_OK) == 0) {
			snprintf(out->module, sizeof(out->module), "%s", modules[i]);
			break;
		}
	}
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		set_why(out->why, sizeof(out->why), "cannot open /dev/kvm: %s", strerror(errno));
		return -1;
	}
	int api = ioctl(kvm, KVM_GET_API_VERSION, 0);
	if (api != KVM_API_VERSION) {
		set_why(out->why, sizeof(out->why), "/dev/kvm speaks API %d, not %d", api,
			KVM_API_VERSION);
		close(kvm);
		return -1;
	}
	return kvm;
}

/* open_kvm, and a VM made (arm64: asked for its vGIC and PSCI). */
static void doctor_check_kvm(struct kvm_caps *out)
{
	int kvm = open_kvm(out);
	if (kvm < 0)
		return;
	int vm;
	do {
		vm = ioctl(kvm, KVM_CREATE_VM, 0);
	} while (vm < 0 && errno == EINTR);
	if (vm < 0) {
		set_why(out->why, sizeof(out->why), "KVM_CREATE_VM: %s", strerror(errno));
		close(kvm);
		return;
	}
	if (KVM_PROBE_ARM64)
		arm64_facts(vm, out);
	close(vm);
	close(kvm);
	out->usable = true;
}

static void doctor_probe_ring3(struct kvm_caps *out)
{
	struct probe_run r;
	char line[256];

	if (doctor_run_probe("ring3.bin", DOCTOR_RING3_TIMEOUT_MS, &r, out->why, sizeof(out->why)))
		return;
	/* The printed digit is the verdict: a broken host may fault after printing it. */
	if (r.outlen >= 1 && r.out[0] == '0' && (r.outlen == 1 || r.out[1] == '\n')) {
		out->ring3_syscall = PROBE_YES;
	} else if (r.outlen >= 1 && r.out[0] == '3' && (r.outlen == 1 || r.out[1] == '\n')) {
		out->ring3_syscall = PROBE_NO;
	} else {
		first_err_line(&r, line, sizeof(line));
		set_why(out->why, sizeof(out->why), "ring-3 probe printed %s (exit status %d%s%s)",
			r.outlen ? "something unexpected" : "nothing", r.status,
			line[0] ? ": " : "", line);
	}
}

static void doctor_probe_loop(struct kvm_caps *out)
{
	struct probe_run r;
	char line[256];
	unsigned long iterations = 0, ipi = 0;
	unsigned rounds = 0;

	if (doctor_run_probe("loop.bin", DOCTOR_LOOP_TIMEOUT_MS, &r, out->why, sizeof(out->why)))
		return;
	if (r.status == VMM_EXIT_TIMEOUT) {
		/* Not even done in DOCTOR_LOOP_TIMEOUT_MS: nothing native is that slow. */
		out->kernel_native = PROBE_NO;
		set_why(out->why, sizeof(out->why), "kernel-mode probe still running after %u ms",
			DOCTOR_LOOP_TIMEOUT_MS);
		return;
	}
	const char *l = strstr(r.out, "loop iterations=");
	if (r.status != 0 || !l ||
	    sscanf(l, "loop iterations=%lu rounds=%u insns_per_iteration=%lu", &iterations, &rounds,
		   &ipi) != 3 ||
	    !iterations || !ipi) {
		first_err_line(&r, line, sizeof(line));
		set_why(out->why, sizeof(out->why), "kernel-mode probe failed (exit status %d%s%s)",
			r.status, line[0] ? ": " : "", line);
		return;
	}
	/* Fastest START..END pair: preemption of the VMM thread only ever makes rounds slower. */
	uint64_t best = 0, start = 0;
	bool started = false;
	for (const char *p = r.err; (p = strstr(p, "bulkhead-vmm: mark ")) != NULL; p++) {
		unsigned v;
		unsigned long long ns;
		if (sscanf(p, "bulkhead-vmm: mark %u %llu", &v, &ns) != 2)
			continue;
		if (v == 1) {
			start = ns;
			started = true;
		} else if (v == 2 && started && ns > start) {
			if (!best || ns - start < best)
				best = ns - start;
			started = false;
		}
	}
	if (!best) {
		set_why(out->why, sizeof(out->why), "kernel-mode probe reported no timing marks");
		return;
	}
	/* instructions per microsecond == million instructions per second */
	out->kernel_mips = (double)iterations * (double)ipi / ((double)best / 1000.0);
	out->kernel_native = out->kernel_mips >= DOCTOR_NATIVE_MIPS ? PROBE_YES : PROBE_NO;
}

void kvm_probe(bool with_timing, struct kvm_caps *out)
{
	memset(out, 0, sizeof(*out));
	doctor_check_kvm(out);
	if (!out->usable)
		return;
	if (KVM_PROBE_ARM64)
		return; /* arm64_facts ran with doctor_check_kvm */
	doctor_probe_ring3(out);
	if (with_timing)
		doctor_probe_loop(out);
	kvm_probe_cache_put(out);
}

void kvm_probe_cached(struct kvm_caps *out)
{
	memset(out, 0, sizeof(*out));
	/* Kept verdicts were found with a VM of this /dev/kvm: making one more (tens of
	 * milliseconds where KVM is nested) would tell nothing new. */
	if (!KVM_PROBE_ARM64) {
		int kvm = open_kvm(out);
		if (kvm < 0)
			return;
		close(kvm);
		out->usable = true;
		if (kvm_probe_cache_get(out))
			return;
		memset(out, 0, sizeof(*out));
	}
	doctor_check_kvm(out);
	if (!out->usable || KVM_PROBE_ARM64)
		return;
	doctor_probe_ring3(out);
	doctor_probe_loop(out);
	kvm_probe_cache_put(out);
}

bool kvm_runs_linux(const struct kvm_caps *caps)
{
#if defined(__aarch64__)
	return caps->usable && caps->gic[0] && caps->psci_0_2;
#else
	/* User space is what a session needs; a kernel that runs at emulation speed cannot
	 * host one in useful time either. */
	return caps->usable && caps->ring3_syscall == PROBE_YES && caps->kernel_native != PROBE_NO;
#endif
}

const char *kvm_why_not_linux(const struct kvm_caps *caps)
{
	if (!caps->usable)
		return "KVM not usable";
#if defined(__aarch64__)
	if (!caps->gic[0])
		return "KVM offers no in-kernel GICv3 or GICv2";
	if (!caps->psci_0_2)
		return "KVM offers no PSCI 0.2";
#endif
	if (caps->ring3_syscall == PROBE_NO)
		return "ring-3 syscalls are broken";
	if (caps->kernel_native == PROBE_NO)
		return "guest kernel mode is emulated";
	return "probe failed";
}
