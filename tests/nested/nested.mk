# SPDX-License-Identifier: Apache-2.0
# tests/nested/: bulkhead-vmm under a KVM host with hardware semantics (L1, AMD SVM emulated by
# QEMU 10's TCG; tests/nested/README.md). `make test` runs it as the suite nested/l1; alone:
.PHONY: test-nested test-arm64
test-nested: test-programs
	@BUILD=$(BUILD) sh tests/run.sh nested/
# The arm64 build in the nested arm64 host (tests/nested/arm64.sh; also part of `make test`).
test-arm64: test-programs
	@BUILD=$(BUILD) sh tests/run.sh nested/arm64
