/* cli/engine.h: which engine runs a session (bulkhead-vmm on KVM, or QEMU microvm). */
#ifndef BULKHEAD_CLI_ENGINE_H
#define BULKHEAD_CLI_ENGINE_H

#include <stdbool.h>

enum engine_kind {
	ENGINE_AUTO,
	ENGINE_KVM,  /* bulkhead-vmm */
	ENGINE_QEMU, /* qemu-system-x86_64 -M microvm */
};

struct engine_choice {
	enum engine_kind kind; /* never ENGINE_AUTO after engine_choose() */
	bool qemu_accel_kvm;   /* QEMU engine: -accel kvm (else TCG) */
	bool kvm_emulated;     /* kvm engine: this host emulates guest kernel mode (quirks) */
	char why[256];	       /* one line: why this engine */
};

/* Parses "auto" | "kvm" | "qemu"; returns -1 on anything else. */
int engine_parse(const char *name, enum engine_kind *out);
const char *engine_name(enum engine_kind kind);

/* Resolves `requested` for this host (probing KVM when needed). Returns 0, or
 * -1 with a one-line reason in out->why when the requested engine cannot run.
 * kvm is allowed where `bulkhead doctor` says KVM runs Linux user space; auto picks it
 * there, QEMU elsewhere. ENGINE_KVM_FORCE_ENV=1 allows kvm anyway (the Linux smoke test on
 * hosts like kvm_pvm, where the guest boots to /init and its user space then dies). */
#define ENGINE_KVM_FORCE_ENV "BULKHEAD_KVM_FORCE"
int engine_choose(enum engine_kind requested, struct engine_choice *out);

/* Path of qemu-system-x86_64 (or $BULKHEAD_QEMU), NULL when not installed. */
const char *engine_qemu_path(void);

#endif
