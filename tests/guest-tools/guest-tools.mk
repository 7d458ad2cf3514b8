# SPDX-License-Identifier: Apache-2.0
# tests/guest-tools/: static test programs for the guest, and the test initramfs that carries
# them: the base initramfs with a second cpio appended (the kernel unpacks both).
GUEST_TOOLS_DIR := $(BUILD)/tests/guest-tools
VSOCK_TOOL      := $(GUEST_TOOLS_DIR)/vsock-tool
TEST_INITRAMFS  := $(GUEST_TOOLS_DIR)/initramfs-test.cpio

$(VSOCK_TOOL): tests/guest-tools/vsock_tool.c lib/io.c | deps
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -I. -O2 -static -s -o $@ $^

# A hostile guest command for the deadline tests (copied into a work share by the test).
AGENT_ATTACK    := $(GUEST_TOOLS_DIR)/agent-attack
$(AGENT_ATTACK): tests/guest-tools/agent_attack.c lib/io.c | deps
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -I. -O2 -static -s -o $@ $^

# One file-system call in the guest, for the share rules' tests (copied into a work share).
SHARE_PROBE     := $(GUEST_TOOLS_DIR)/share-probe
$(SHARE_PROBE): tests/guest-tools/share_probe.c | deps
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -I. -O2 -static -s -o $@ $^

# /init of a Linux guest saved and restored mid-run (tests/e2e/test_vmm_snapshot.sh,
# bench/nested-snapshot.sh): static, and never sanitized (a guest has no sanitizer run time).
$(BUILD)/tests/snap-init: tests/guest-tools/snap_init.c | deps
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -I. -O2 -static -s -o $@ $^
test-programs: $(BUILD)/tests/snap-init

$(TEST_INITRAMFS): $(INITRAMFS_BASE) $(VSOCK_TOOL) $(LIBDIR)/gen_init_cpio
	@mkdir -p $(@D)
	printf 'dir /usr/local 0755 0 0\ndir /usr/local/bin 0755 0 0\nfile /usr/local/bin/vsock-tool %s 0755 0 0\n' \
	  $(abspath $(VSOCK_TOOL)) > $@.list
	$(LIBDIR)/gen_init_cpio -t 0 $@.list > $@.extra
	cat $(INITRAMFS_BASE) $@.extra > $@.tmp
	@rm -f $@.list $@.extra
	@mv $@.tmp $@

# A guest that never calls home: the base initramfs with /init replaced by a shell script.
SILENT_INITRAMFS := $(GUEST_TOOLS_DIR)/initramfs-silent.cpio
$(SILENT_INITRAMFS): $(INITRAMFS_BASE) tests/guest-tools/silent-init.sh $(LIBDIR)/gen_init_cpio
	@mkdir -p $(@D)
	printf 'file /init %s 0755 0 0\n' $(abspath tests/guest-tools/silent-init.sh) > $@.list
	$(LIBDIR)/gen_init_cpio -t 0 $@.list > $@.extra
	cat $(INITRAMFS_BASE) $@.extra > $@.tmp
	@rm -f $@.list $@.extra
	@mv $@.tmp $@

.PHONY: guest-tools
guest-tools: $(VSOCK_TOOL) $(AGENT_ATTACK) $(SHARE_PROBE) $(TEST_INITRAMFS) $(SILENT_INITRAMFS)
test-programs: guest-tools
