/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_plan.c: `run`/`start` options into a request, and a request into a plan
 * (session/plan.c): the work share judged once, the scope's grants, the global policy, the
 * session's end, and the one kernel command line. No VM starts here. */
#include "cli/session_cmds.h"
#include "session/plan.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64]; /* a scratch directory with a fake guest kernel and initramfs */
static char work[128], other[128], link_[128];
static struct session_plan plan;
static char err[512];

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-plan.XXXXXX");
	assert_non_null(mkdtemp(dir));
	char p[256];
	snprintf(p, sizeof(p), "%s/vmlinux", dir);
	put(p, "\177ELF not really a kernel, but its magic is right");
	snprintf(p, sizeof(p), "%s/initramfs.cpio", dir);
	put(p, "070701");
	snprintf(work, sizeof(work), "%s/work", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(link_, sizeof(link_), "%s/link", dir);
	assert_int_equal(mkdir(work, 0755), 0);
	assert_int_equal(mkdir(other, 0755), 0);
	assert_int_equal(symlink(work, link_), 0);
	setenv("BULKHEAD_LIBDIR", dir, 1);
	unsetenv("BULKHEAD_BROKER");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	plan_release(&plan);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* Parses a run command line (NULL-terminated) into req; returns session_opts_parse's. */
static int parse(struct session_request *req, bool detached, ...)
{
	static char *argv[32];
	int argc = 0;
	va_list ap;
	va_start(ap, detached);
	argv[argc++] = "run";
	for (char *a; (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	*req = (struct session_request)SESSION_REQUEST_INIT;
	return session_opts_parse(argc, argv, detached, req);
}

static void test_options(void **state)
{
	(void)state;
	struct session_request r;
	assert_int_equal(parse(&r, false, "--mem", "512", "--cpus", "2", "--timeout", "1.5", "-e",
			       "A=1", "--work", "/x:ro", "-it", "--", "sh", "-c", "x", NULL),
			 -1);
	assert_int_equal(r.mem_mib, 512);
	assert_int_equal(r.cpus, 2);
	assert_true(r.timeout_s == 1.5);
	assert_string_equal(r.env[0], "A=1");
	assert_int_equal(r.nenv, 1);
	assert_string_equal(r.work, "/x:ro");
	assert_true(r.interactive && r.tty);
	assert_string_equal(r.argv[0], "sh");
	assert_string_equal(r.argv[2], "x");
	assert_null(r.argv[3]);
	/* Usage errors: one line and 125, before anything else. */
	assert_int_equal(parse(&r, false, "--mem", "63", "true", NULL), EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, "--cpus", "0", "true", NULL), EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, "--timeout", "-1", "true", NULL), EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, "--timeout", "1x", "true", NULL), EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, "--engine", "xen", "true", NULL), EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, "-e", "=1", "true", NULL), EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, "--ram-file", "a,b", "true", NULL), EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, "--no-jail", "--jail-uid", "5", "true", NULL),
			 EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, "--bogus", "true", NULL), EXIT_BULKHEAD);
	assert_int_equal(parse(&r, false, NULL), EXIT_BULKHEAD);	/* no command */
	assert_int_equal(parse(&r, true, "true", NULL), EXIT_BULKHEAD); /* start takes none */
	assert_int_equal(parse(&r, true, NULL), -1);
	assert_null(r.argv);
	/* A shared broker without a scope has nothing to register. */
	setenv("BULKHEAD_BROKER", "/nonexistent.sock", 1);
	assert_int_equal(parse(&r, false, "true", NULL), -1);
	assert_null(r.broker.shared);
	assert_int_equal(parse(&r, false, "--scope", "s.json", "--vault", "v", "true", NULL),
			 EXIT_BULKHEAD);
	unsetenv("BULKHEAD_BROKER");
}

static int resolve(const struct session_request *r)
{
	err[0] = '\0';
	plan_release(&plan); /* the last one's (plan_resolve starts afresh) */
	return plan_resolve(r, &plan, err, sizeof(err));
}

static void test_plain_plan(void **state)
{
	(void)state;
	struct session_request r;
	assert_int_equal(parse(&r, false, "--engine", "qemu", "true", NULL), -1);
	assert_int_equal(resolve(&r), 0);
	assert_int_equal(plan.share_origin, SHARE_NONE);
	assert_string_equal(plan.guest_cwd, "/");
	assert_non_null(strstr(plan.cmdline, "console=ttyS0"));
	assert_non_null(strstr(plan.cmdline, " reboot=t "));
	assert_non_null(strstr(plan.cmdline, " quiet"));
	assert_null(strstr(plan.cmdline, BOOT_ARGS_WORK));
	assert_null(strstr(plan.cmdline, BOOT_ARGS_BROKER));
	assert_int_equal(plan.boot_timeout_s, BOOT_TIMEOUT_DEFAULT_S);
	assert_true(plan.mem_limit_bytes > (256ull << 20));
	assert_true(plan.timeout_s == 0);
	/* -v keeps the kernel talking. */
	assert_int_equal(parse(&r, false, "--engine", "qemu", "-v", "true", NULL), -1);
	assert_int_equal(resolve(&r), 0);
	assert_null(strstr(plan.cmdline, " quiet"));
}

static void test_work_share(void **state)
{
	(void)state;
	struct session_request r;
	char arg[160];
	snprintf(arg, sizeof(arg), "%s:ro", work);
	assert_int_equal(parse(&r, false, "--engine", "qemu", "--work", arg, "true", NULL), -1);
	assert_int_equal(resolve(&r), 0);
	assert_int_equal(plan.share_origin, SHARE_ASKED);
	assert_true(plan.share.ro);
	assert_string_equal(plan.share.dir, work);
	assert_string_equal(plan.guest_cwd, "/work");
	assert_non_null(strstr(plan.cmdline, BOOT_ARGS_WORK "ro"));
	/* A path through a link is refused, naming the directory to give. */
	assert_int_equal(parse(&r, false, "--engine", "qemu", "--work", link_, "true", NULL), -1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "symbolic link"));
	assert_non_null(strstr(err, work));
	snprintf(arg, sizeof(arg), "%s/missing", dir);
	assert_int_equal(parse(&r, false, "--engine", "qemu", "--work", arg, "true", NULL), -1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "No such file"));
}

/* A scope file in the scratch directory. */
static const char *scope(const char *json)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/scope.json", dir);
	put(path, json);
	return path;
}

static const char *policy(const char *json)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/policy.json", dir);
	put(path, json);
	return path;
}

static void test_scope_grant(void **state)
{
	(void)state;
	struct session_request r;
	char json[512], arg[160];
	snprintf(json, sizeof(json),
		 "{ \"allow\": [], \"work\": { \"path\": \"%s\", "
		 "\"read_only\": true } }",
		 work);
	const char *s = scope(json);
	assert_int_equal(parse(&r, false, "--engine", "qemu", "--scope", s, "true", NULL), -1);
	assert_int_equal(resolve(&r), 0);
	assert_int_equal(plan.share_origin, SHARE_GRANTED);
	assert_true(plan.share.ro);
	assert_non_null(strstr(plan.cmdline, BOOT_ARGS_BROKER "1"));
	assert_non_null(strstr(plan.cmdline, BOOT_ARGS_WORK "ro"));
	/* --work may repeat the grant, never name another directory or widen it. */
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--scope", s, "--work", work, "true", NULL),
		-1);
	assert_int_equal(resolve(&r), 0);
	assert_true(plan.share.ro);
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--scope", s, "--work", other, "true", NULL),
		-1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "and no other directory"));
	snprintf(arg, sizeof(arg), "%s:rw", work);
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--scope", s, "--work", arg, "true", NULL),
		-1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "the scope grants it read-only"));
	/* A writable grant narrowed to read-only by --work. */
	snprintf(json, sizeof(json), "{ \"work\": { \"path\": \"%s\" } }", work);
	s = scope(json);
	snprintf(arg, sizeof(arg), "%s:ro", work);
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--scope", s, "--work", arg, "true", NULL),
		-1);
	assert_int_equal(resolve(&r), 0);
	assert_true(plan.share.ro);
	/* An expired scope starts nothing. */
	s = scope("{ \"allow\": [], \"expires_at\": \"2020-01-01T00:00:00Z\" }");
	assert_int_equal(parse(&r, false, "--engine", "qemu", "--scope", s, "true", NULL), -1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "expired at 2020-01-01T00:00:00Z"));
}

static void test_policy(void **state)
{
	(void)state;
	struct session_request r;
	char json[512], when[32];
	const char *p = policy("{ \"limits\": { \"max_mem_mib\": 300, \"max_cpus\": 1, "
			       "\"max_session_seconds\": 100 } }");
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--policy", p, "--mem", "512", "true", NULL),
		-1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "limits.max_mem_mib"));
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--policy", p, "--cpus", "2", "true", NULL),
		-1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "limits.max_cpus"));
	assert_int_equal(parse(&r, false, "--engine", "qemu", "--policy", p, "--timeout", "200",
			       "true", NULL),
			 -1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "limits.max_session_seconds"));
	/* The lifetime is the session's end when nothing earlier is asked. */
	assert_int_equal(parse(&r, false, "--engine", "qemu", "--policy", p, "true", NULL), -1);
	assert_int_equal(resolve(&r), 0);
	assert_true(plan.timeout_s == 100);
	assert_int_equal(plan.end_kind, END_TIMEOUT);
	/* The earlier of lifetime and the scope's expiry wins, whichever it is. */
	time_t t = time(NULL) + 50;
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	snprintf(json, sizeof(json), "{ \"allow\": [], \"expires_at\": \"%s\" }", when);
	const char *s = scope(json);
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--policy", p, "--scope", s, "true", NULL),
		-1);
	assert_int_equal(resolve(&r), 0);
	assert_int_equal(plan.end_kind, END_EXPIRY);
	assert_true(plan.timeout_s > 40 && plan.timeout_s <= 50);
	assert_string_equal(plan.expiry, when);
	t = time(NULL) + 500;
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	snprintf(json, sizeof(json), "{ \"allow\": [], \"expires_at\": \"%s\" }", when);
	s = scope(json);
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--policy", p, "--scope", s, "true", NULL),
		-1);
	assert_int_equal(resolve(&r), 0);
	assert_int_equal(plan.end_kind, END_TIMEOUT);
	assert_true(plan.timeout_s == 100);
	/* A forbidden share is named with where it came from. */
	snprintf(json, sizeof(json), "{ \"deny_share_paths\": [\"%s\"] }", work);
	p = policy(json);
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--policy", p, "--work", work, "true", NULL),
		-1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "--work "));
	assert_non_null(strstr(err, "deny_share_paths"));
	snprintf(json, sizeof(json), "{ \"work\": { \"path\": \"%s\" } }", work);
	s = scope(json);
	assert_int_equal(
		parse(&r, false, "--engine", "qemu", "--policy", p, "--scope", s, "true", NULL),
		-1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "the scope's work "));
	/* A broken policy file is named with its line and column. */
	p = policy("{ \"deny_hosts\": [ \"a.example\" ], }");
	assert_int_equal(parse(&r, false, "--engine", "qemu", "--policy", p, "true", NULL), -1);
	assert_int_equal(resolve(&r), -1);
	assert_non_null(strstr(err, "line 1, column"));
}

static void test_cmdline(void **state)
{
	(void)state;
	struct engine_choice kvm = { .kind = ENGINE_KVM, .ops = &engine_kvm_ops };
	char buf[BOOT_ARGS_CMDLINE_MAX];
	assert_int_equal(engine_cmdline(&kvm, true, "rw", true, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, " reboot=k "));
	assert_non_null(strstr(buf, BOOT_ARGS_WORK "rw"));
	assert_non_null(strstr(buf, BOOT_ARGS_BROKER "1"));
	assert_null(strstr(buf, "noxsave"));
	kvm.kvm_emulated = true; /* a host that emulates guest kernel mode needs the quirks */
	assert_int_equal(engine_cmdline(&kvm, true, NULL, false, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "noxsave clearcpuid="));
	assert_int_equal(engine_cmdline(&kvm, true, NULL, false, buf, 40), -1); /* too long */
}

/* A template's command line keeps nothing of the session; its bulkhead.* words go to the
 * restored guest, whatever -v said. */
static void test_template_split(void **state)
{
	(void)state;
	char t[BOOT_ARGS_CMDLINE_MAX], a[BOOT_ARGS_CMDLINE_MAX], t2[BOOT_ARGS_CMDLINE_MAX],
		a2[BOOT_ARGS_CMDLINE_MAX];
	assert_int_equal(plan_template_split("console=ttyS0 panic=-1 quiet bulkhead.work=rw "
					     "bulkhead.broker=1  bulkhead.hostname=h1",
					     t, sizeof(t), a, sizeof(a)),
			 0);
	assert_string_equal(t, "console=ttyS0 panic=-1 quiet bulkhead.template=1");
	assert_string_equal(a, "bulkhead.work=rw bulkhead.broker=1 bulkhead.hostname=h1");
	/* Verbose (no "quiet") gives the same template. */
	assert_int_equal(plan_template_split("console=ttyS0 panic=-1 bulkhead.work=ro", t2,
					     sizeof(t2), a2, sizeof(a2)),
			 0);
	assert_string_equal(t2, t);
	assert_string_equal(a2, "bulkhead.work=ro");
	/* Nothing of the session's: no arguments at all. */
	assert_int_equal(plan_template_split("console=ttyS0", t, sizeof(t), a, sizeof(a)), 0);
	assert_string_equal(a, "");
	/* What does not fit is refused, never cut. */
	assert_int_equal(plan_template_split("console=ttyS0 bulkhead.work=rw", t, 20, a, sizeof(a)),
			 -1);
	assert_int_equal(plan_template_split("console=ttyS0 bulkhead.work=rw", t, sizeof(t), a, 10),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),	   cmocka_unit_test(test_plain_plan),
		cmocka_unit_test(test_work_share), cmocka_unit_test(test_scope_grant),
		cmocka_unit_test(test_policy),	   cmocka_unit_test(test_cmdline),
		cmocka_unit_test(test_template_split),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
