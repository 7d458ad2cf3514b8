/* SPDX-License-Identifier: Apache-2.0 */
/* lib/san.c: a sanitizer build's needs in bulkhead-vmm and bulkhead-vsock (see lib/san.h).
 * Both run with an empty environment (the jail) and under seccomp, so the run time's options
 * are set here, and its system calls join their allow-lists. Leak detection is off: it stops
 * every thread with ptrace and reads /proc at exit, which no allow-list should permit; every
 * other check stays on, and a report ends the process (-fno-sanitize-recover=all). */
#include "lib/san.h"

#ifdef BULKHEAD_SANITIZED
#include <errno.h>
#include <sys/ioctl.h>

const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

const char *__ubsan_default_options(void)
{
	return "print_stacktrace=1";
}

/* Measured with strace: ASan and UBSan reports under bulkhead-vsock's list, and thread lives
 * under each of bulkhead-vmm's roles (tests/unit/test_vmm_seccomp.c repeats the latter in every
 * sanitizer run). sched_yield was not seen: the run time yields when two threads report at
 * once. Opening files is already refused with EACCES by every list. */
static const int san_calls[] = {
	SCMP_SYS(mmap),	       /* the allocator: chunks, shadow, report buffers */
	SCMP_SYS(munmap),      /* the same, and a thread's stacks at its end */
	SCMP_SYS(madvise),     /* returning freed memory */
	SCMP_SYS(mprotect),    /* guard pages */
	SCMP_SYS(sigaltstack), /* a thread's alternate signal stack, set and torn down */
	SCMP_SYS(gettid),      /* "thread T1" in reports */
	SCMP_SYS(getpid),      /* "==PID==" in reports */
	SCMP_SYS(write),       /* the report, on stderr */
	SCMP_SYS(sched_yield), /* a report waits while another thread reports */
	SCMP_SYS(exit_group),  /* the end of a report: the process exits */
};

int san_seccomp_allow(scmp_filter_ctx ctx)
{
	int rc = 0;
	for (unsigned i = 0; !rc && i < sizeof(san_calls) / sizeof(san_calls[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, san_calls[i], 0);
	/* Whether stderr is a terminal (colours): answered "no" without looking. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_EQ, TCGETS));
	/* Its own name for the report's module list: refused, frames then show the path. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(readlink), 0);
	return rc;
}
#else
/* A normal build: nothing (the translation unit must not be empty). */
typedef int san_unused;
#endif
