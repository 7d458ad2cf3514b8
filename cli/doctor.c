/* SPDX-License-Identifier: Apache-2.0 */
/* cli/doctor.c: `bulkhead doctor` — what this host can run (session/kvm_probe.c), QEMU,
 * virtiofsd and the guest kernel, whether the jail works (doctor_jail.c), and which engine
 * `auto` picks. Each part finds its facts as JSON and says them as text lines read from that
 * same object, so `doctor` and `doctor --json` cannot disagree. */
#include "cli/doctor.h"
#include "broker/loop.h"

#include "session/engine.h"
#include "session/kvm_probe.h"
#include "session/paths.h"

#include <limits.h>
#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char doctor_usage[] =
	"usage: bulkhead doctor [--json]\n"
	"\n"
	"Prints what this host can run, one fact a line: whether /dev/kvm is usable; whether\n"
	"guest kernel mode runs natively or is emulated (a timed loop in a probe guest); whether\n"
	"a guest's ring-3 syscall works (a probe guest that drops to ring 3 and makes one);\n"
	"QEMU, virtiofsd and the guest kernel; whether the jail works (a jailed process started\n"
	"as a session's back end is) and whether sessions get cgroup limits; and which engine\n"
	"'run --engine auto' picks, and why.\n"
	"\n"
	"--json prints the same facts as one JSON object, a key per line of text (\"why\" is the\n"
	"text in parentheses, or null), plus \"ok\" (the exit status is 0):\n"
	"  kvm                  {usable, api_version, module, gic: v3|v2|null, psci: 0.2|null\n"
	"                       (arm64 only; null elsewhere), why}\n"
	"  guest_kernel_mode    {mode: native|emulated|unknown|not_probed, mips (million\n"
	"                       instructions/s, or null), why}\n"
	"  guest_ring3_syscall  {result: works|broken|unknown|not_probed, why}\n"
	"  qemu                 {path, version, why}        virtiofsd        {path, why}\n"
	"  guest_kernel         {vmlinux, bzimage, why} (arm64: {image, why})\n"
	"  guest_initramfs      {path, why}\n"
	"  jail                 {works, per_session_uid, uid (the first of the sessions' uids,\n"
	"                       or the one uid mapped), why}\n"
	"  cgroups              {version: 1|2|null, why}\n"
	"  engine_auto          {engine: kvm|qemu|null, why}\n"
	"Paths are absolute; a missing thing is null with why saying what to do.\n"
	"\n"
	"Exit status: 0 when some engine can run sessions here and the jail works, 125 else.\n";

const char *doctor_str(const json_t *part, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(part, key));
	return s ? s : dflt;
}

/* A C string for "s?" in json_pack: an empty one is no value. */
static const char *nz(const char *s)
{
	return s && *s ? s : NULL;
}

/* --- KVM: three lines from one probe --------------------------------------------------- */

/* The probe guests are x86-64; arm64 has no paravirtual KVM to tell apart. */
#if defined(__aarch64__)
#define ARM64_NOT_PROBED "x86-64 probe; arm64 guests run EL1 and EL0 in hardware"
#endif

static json_t *kernel_mode(const struct kvm_caps *c)
{
#if defined(__aarch64__)
	(void)c;
	return json_pack("{s:s, s:n, s:s}", "mode", "not_probed", "mips", "why", ARM64_NOT_PROBED);
#endif
	if (c->kernel_native == PROBE_YES || (c->kernel_native == PROBE_NO && c->kernel_mips > 0))
		return json_pack("{s:s, s:f, s:n}", "mode",
				 c->kernel_native == PROBE_YES ? "native" : "emulated", "mips",
				 c->kernel_mips, "why");
	if (c->kernel_native == PROBE_NO)
		return json_pack("{s:s, s:n, s:s?}", "mode", "emulated", "mips", "why", nz(c->why));
	return json_pack("{s:s, s:n, s:s}", "mode", "unknown", "mips", "why",
			 c->why[0] ? c->why : "probe not run");
}

static json_t *ring3(const struct kvm_caps *c)
{
#if defined(__aarch64__)
	(void)c;
	return json_pack("{s:s, s:s}", "result", "not_probed", "why", ARM64_NOT_PROBED);
#endif
	if (c->ring3_syscall == PROBE_YES)
		return json_pack("{s:s, s:n}", "result", "works", "why");
	if (c->ring3_syscall == PROBE_NO)
		return json_pack("{s:s, s:s}", "result", "broken", "why", "handler ran in ring 3");
	return json_pack("{s:s, s:s}", "result", "unknown", "why",
			 c->why[0] ? c->why : "probe not run");
}

static void kvm_find(json_t *f)
{
	struct kvm_caps c;
	kvm_probe(true, &c);
	if (!c.usable) {
		json_object_set_new(f, "kvm",
				    json_pack("{s:b, s:n, s:n, s:s}", "usable", 0, "api_version",
					      "module", "why",
					      c.why[0] ? c.why : "unknown reason"));
		json_object_set_new(f, "guest_kernel_mode",
				    json_pack("{s:s, s:n, s:s}", "mode", "not_probed", "mips",
					      "why", "no usable KVM"));
		json_object_set_new(
			f, "guest_ring3_syscall",
			json_pack("{s:s, s:s}", "result", "not_probed", "why", "no usable KVM"));
		return;
	}
	json_object_set_new(f, "kvm",
			    json_pack("{s:b, s:i, s:s?, s:s?, s:s?, s:n}", "usable", 1,
				      "api_version", KVM_API_VERSION, "module", nz(c.module), "gic",
				      nz(c.gic), "psci", c.psci_0_2 ? "0.2" : NULL, "why"));
	json_object_set_new(f, "guest_kernel_mode", kernel_mode(&c));
	json_object_set_new(f, "guest_ring3_syscall", ring3(&c));
}

/* "not_probed" reads "not probed" in the text. */
static const char *words(const char *v)
{
	return strcmp(v, "not_probed") ? v : "not probed";
}

static void kvm_say(const json_t *f)
{
	const json_t *k = json_object_get(f, "kvm"), *m = json_object_get(f, "guest_kernel_mode"),
		     *r = json_object_get(f, "guest_ring3_syscall");
	if (json_is_true(json_object_get(k, "usable")) && doctor_str(k, "gic", NULL))
		printf("kvm: usable (API %d, module %s, vGIC%s, PSCI %s)\n",
		       (int)json_integer_value(json_object_get(k, "api_version")),
		       doctor_str(k, "module", "unknown"), doctor_str(k, "gic", ""),
		       doctor_str(k, "psci", "missing"));
	else if (json_is_true(json_object_get(k, "usable")))
		printf("kvm: usable (API %d, module %s)\n",
		       (int)json_integer_value(json_object_get(k, "api_version")),
		       doctor_str(k, "module", "unknown"));
	else
		printf("kvm: not usable (%s)\n", doctor_str(k, "why", ""));

	const json_t *mips = json_object_get(m, "mips");
	const char *mode = words(doctor_str(m, "mode", ""));
	if (json_is_number(mips)) {
		double v = json_number_value(mips);
		printf("guest kernel mode: %s (~%.*f million instructions/s)\n", mode,
		       v < 10 ? 1 : 0, v);
	} else {
		printf("guest kernel mode: %s (%s)\n", mode, doctor_str(m, "why", ""));
	}

	const char *res = doctor_str(r, "result", "");
	if (strcmp(res, "works") == 0)
		printf("guest ring-3 syscall: works\n");
	else
		printf("guest ring-3 syscall: %s (%s)\n", words(res), doctor_str(r, "why", ""));
}

/* --- QEMU, virtiofsd, the guest kernel and initramfs ----------------------------------- */

static void qemu_find(json_t *f)
{
	const char *qemu = engine_qemu_path();
	if (!qemu) {
		json_object_set_new(f, "qemu",
				    json_pack("{s:n, s:n, s:s}", "path", "version", "why",
					      "run 'make deps': package qemu-system-x86"));
		return;
	}
	struct probe_run r;
	char version[64] = "", why[PATH_MAX + 32] = "";
	char *const argv[] = { (char *)(uintptr_t)qemu, "-version", NULL };
	if (probe_exec(argv, 5000, &r) == 0 && r.status == 0) {
		const char *v = strstr(r.out, "version ");
		if (v)
			sscanf(v + 8, "%63[^ \n(]", version);
	}
	if (!version[0])
		snprintf(why, sizeof(why), "'%s -version' failed", qemu);
	json_object_set_new(f, "qemu",
			    json_pack("{s:s, s:s?, s:s?}", "path", qemu, "version", nz(version),
				      "why", nz(why)));
}

static void qemu_say(const json_t *f)
{
	const json_t *q = json_object_get(f, "qemu");
	const char *path = doctor_str(q, "path", NULL), *version = doctor_str(q, "version", NULL);
	if (!path)
		printf("qemu: not found (%s)\n", doctor_str(q, "why", ""));
	else if (version)
		printf("qemu: %s (QEMU %s)\n", path, version);
	else
		printf("qemu: %s (version unknown: %s)\n", path, doctor_str(q, "why", ""));
}

/* {"path": P, "why": null}, P resolved; or {"path": null, "why": WHY}. */
static json_t *file_part(const char *key, const char *path, const char *why)
{
	char shown[PATH_MAX];
	if (path && access(path, R_OK) == 0)
		return json_pack("{s:s, s:n}", key, realpath(path, shown) ? shown : path, "why");
	return json_pack("{s:n, s:s}", key, "why", why);
}

static void files_find(json_t *f)
{
	static const char *const virtiofsd[] = { "/usr/lib/qemu/virtiofsd",
						 "/usr/libexec/virtiofsd" };
	const char *libdir = paths_libdir(), *found = NULL;
	char vmlinux[PATH_MAX], bzimage[PATH_MAX], initrd[PATH_MAX], why[PATH_MAX + 64];

	for (size_t i = 0; i < sizeof(virtiofsd) / sizeof(virtiofsd[0]) && !found; i++)
		if (access(virtiofsd[i], X_OK) == 0)
			found = virtiofsd[i];
	json_object_set_new(
		f, "virtiofsd",
		json_pack("{s:s?, s:s?}", "path", found, "why",
			  found ? NULL : "run 'make deps': package qemu-system-common"));

#if defined(__aarch64__)
	if (paths_join(vmlinux, sizeof(vmlinux), libdir, PATHS_GUEST_KERNEL) == 0 &&
	    paths_join(initrd, sizeof(initrd), libdir, "initramfs.cpio") == 0) {
		snprintf(why, sizeof(why), "no %s in %s; run make", PATHS_GUEST_KERNEL, libdir);
		json_object_set_new(f, "guest_kernel", file_part("image", vmlinux, why));
		snprintf(why, sizeof(why), "%s; run make", initrd);
		json_object_set_new(f, "guest_initramfs", file_part("path", initrd, why));
		return;
	}
#endif
	if (paths_join(vmlinux, sizeof(vmlinux), libdir, "vmlinux") ||
	    paths_join(bzimage, sizeof(bzimage), libdir, "bzImage") ||
	    paths_join(initrd, sizeof(initrd), libdir, "initramfs.cpio")) {
		json_object_set_new(f, "guest_kernel",
				    json_pack("{s:n, s:n, s:s}", "vmlinux", "bzimage", "why",
					      "install path too long"));
		json_object_set_new(f, "guest_initramfs",
				    file_part("path", NULL, "install path too long"));
		return;
	}
	json_t *vm = file_part("vmlinux", vmlinux, ""), *bz = file_part("bzimage", bzimage, "");
	snprintf(why, sizeof(why), "no vmlinux or bzImage in %s; run make", libdir);
	bool none = json_is_null(json_object_get(vm, "vmlinux")) &&
		    json_is_null(json_object_get(bz, "bzimage"));
	json_object_set_new(f, "guest_kernel",
			    json_pack("{s:O, s:O, s:s?}", "vmlinux", json_object_get(vm, "vmlinux"),
				      "bzimage", json_object_get(bz, "bzimage"), "why",
				      none ? why : NULL));
	json_decref(vm);
	json_decref(bz);
	snprintf(why, sizeof(why), "%s; run make", initrd);
	json_object_set_new(f, "guest_initramfs", file_part("path", initrd, why));
}

static void files_say(const json_t *f)
{
	const json_t *v = json_object_get(f, "virtiofsd"), *k = json_object_get(f, "guest_kernel"),
		     *i = json_object_get(f, "guest_initramfs");
	if (doctor_str(v, "path", NULL))
		printf("virtiofsd: %s\n", doctor_str(v, "path", ""));
	else
		printf("virtiofsd: not found (%s)\n", doctor_str(v, "why", ""));

	const char *vmlinux = doctor_str(k, "vmlinux", NULL), *bz = doctor_str(k, "bzimage", NULL);
	if (doctor_str(k, "image", NULL))
		printf("guest kernel: %s (arm64 Image)\n", doctor_str(k, "image", ""));
	else if (vmlinux)
		printf("guest kernel: %s, bzImage %s\n", vmlinux, bz ? "present" : "missing");
	else if (bz)
		printf("guest kernel: %s (vmlinux missing)\n", bz);
	else
		printf("guest kernel: missing (%s)\n", doctor_str(k, "why", ""));

	if (doctor_str(i, "path", NULL))
		printf("guest initramfs: %s\n", doctor_str(i, "path", ""));
	else
		printf("guest initramfs: missing (%s)\n", doctor_str(i, "why", ""));
}

/* --- the engine `auto` picks ------------------------------------------------------------ */

static void engine_find(json_t *f)
{
	struct engine_choice choice;
	int rc = engine_choose(ENGINE_AUTO, &choice);
	json_object_set_new(f, "engine_auto",
			    json_pack("{s:s?, s:s}", "engine",
				      rc == 0 ? engine_name(choice.kind) : NULL, "why",
				      choice.why));
}

static void engine_say(const json_t *f)
{
	const json_t *e = json_object_get(f, "engine_auto");
	printf("engine auto: %s (%s)\n", doctor_str(e, "engine", "none"), doctor_str(e, "why", ""));
}

/* --- the broker's connection loop ------------------------------------------------------- */

static void broker_loop_find(json_t *f)
{
	char why[160];
	const char *backend = loop_probe(why, sizeof(why));
	json_object_set_new(f, "broker_event_loop",
			    json_pack("{s:s, s:s?}", "backend", backend, "why",
				      why[0] ? why : NULL));
}

static void broker_loop_say(const json_t *f)
{
	const json_t *l = json_object_get(f, "broker_event_loop");
	const char *why = doctor_str(l, "why", NULL);
	printf("broker event loop: %s%s%s%s\n", doctor_str(l, "backend", ""),
	       why ? " (io_uring unavailable: " : "", why ? why : "", why ? ")" : "");
}

/* In the order of the text; each part's facts are said as soon as they are found. */
static const struct doctor_part {
	void (*find)(json_t *facts);
	void (*say)(const json_t *facts);
} doctor_parts[] = {
	{ kvm_find, kvm_say },	     { qemu_find, qemu_say },
	{ files_find, files_say },   { doctor_jail_find, doctor_jail_say },
	{ engine_find, engine_say }, { broker_loop_find, broker_loop_say },
};

int cmd_doctor(int argc, char **argv)
{
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(doctor_usage, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
			continue;
		}
		fprintf(stderr,
			"bulkhead doctor: unknown argument '%s' (see 'bulkhead doctor --help')\n",
			argv[i]);
		return 125;
	}

	json_t *facts = json_object();
	for (size_t i = 0; facts && i < sizeof(doctor_parts) / sizeof(doctor_parts[0]); i++) {
		doctor_parts[i].find(facts);
		if (!json) {
			doctor_parts[i].say(facts);
			fflush(stdout); /* before the next part's probes start processes */
		}
	}
	const json_t *e = json_object_get(facts, "engine_auto");
	const char *engine = doctor_str(e, "engine", NULL);
	bool jail = json_is_true(json_object_get(json_object_get(facts, "jail"), "works"));
	int rc = engine && jail ? 0 : 125;
	if (json) {
		json_object_set_new(facts, "ok", json_boolean(rc == 0));
		char *text = json_dumps(facts, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
		if (!text) {
			fprintf(stderr, "bulkhead doctor: out of memory\n");
			json_decref(facts);
			return 125;
		}
		printf("%s\n", text);
		free(text);
		fflush(stdout);
	}
	if (!engine)
		fprintf(stderr, "bulkhead doctor: no engine can run sessions on this host: %s\n",
			doctor_str(e, "why", "out of memory"));
	else if (!jail)
		fprintf(stderr, "bulkhead doctor: the jail cannot run on this host\n");
	json_decref(facts);
	return rc;
}
