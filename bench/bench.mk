# SPDX-License-Identifier: Apache-2.0
# bench/: performance, always side by side with a reference measured in the same run.
BENCH_RUNS ?= 20
bench: all
	@BUILD=$(BUILD) RUNS=$(BENCH_RUNS) sh bench/session-start.sh
	@BUILD=$(BUILD) sh bench/share-io.sh
	@BUILD=$(BUILD) sh bench/share-scan.sh
	@BUILD=$(BUILD) sh bench/exec-latency.sh
	@BUILD=$(BUILD) RUNS=$(BENCH_RUNS) sh bench/jail-overhead.sh
bench: $(BUILD)/bench/jail-step
# The jail step alone (bench/jail_step.c), which bench/jail-overhead.sh runs first.
$(BUILD)/bench/jail-step: $(OBJ)/bench/jail_step.o $(JAIL_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
bench-jail: all $(BUILD)/bench/jail-step
	@BUILD=$(BUILD) RUNS=$(BENCH_RUNS) sh bench/jail-overhead.sh
.PHONY: bench-jail
# bench/vmm/: VMM start-up and memory against QEMU microvm (bench/vmm-*.sh).
$(BUILD)/bench/first-byte: bench/vmm/first_byte.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $<
$(BUILD)/bench/first_pvh.elf: bench/vmm/first_pvh.S bench/vmm/first_pvh.ld | deps
	@mkdir -p $(@D)
	$(CC) -m32 -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-T,bench/vmm/first_pvh.ld \
	  -Wl,--no-warn-rwx-segments -o $@ bench/vmm/first_pvh.S
bench-vmm: $(BUILD)/bench/first-byte $(BUILD)/bench/first_pvh.elf $(BIN)/bulkhead-vmm $(GUEST_BINS)
	@BUILD=$(BUILD) RUNS=$(BENCH_RUNS) sh bench/vmm-startup.sh
	@BUILD=$(BUILD) sh bench/vmm-memory.sh
bench: bench-vmm
.PHONY: bench-vmm
# bench/vmm/snapshot_load.c: a snapshot's RAM loaded and checked, per MiB, beside a plain read
# of the same bytes (no KVM needed: the host-side half of a restore).
$(BUILD)/bench/snapshot-load: $(OBJ)/bench/vmm/snapshot_load.o $(VMM_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lz
bench-snapshot-load: $(BUILD)/bench/snapshot-load
	@$(BUILD)/bench/snapshot-load 256 32 15
	@$(BUILD)/bench/snapshot-load 1024 128 9
.PHONY: bench-snapshot-load
# bench/broker-overhead.sh: what the credential broker adds per request, against the same HTTPS
# upstream reached directly and through HAProxy as a bare relay, in the same run.
$(BUILD)/bench/http-load: $(OBJ)/bench/http_load_main.o $(OBJ)/bench/http_load.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lhttp_parser -lssl -lcrypto -lpthread
bench-broker: $(BUILD)/bench/http-load $(BIN)/bulkhead-broker $(BUILD)/tests/https-echo \
  $(BUILD)/tests/proxy-client
	@BUILD=$(BUILD) sh bench/broker-overhead.sh
bench: bench-broker
.PHONY: bench-broker
# bench/broker-stream.sh: how late each server-sent event arrives through the broker, with and
# without a credential, against the same stream reached directly, in one run.
bench-broker-stream: $(BIN)/bulkhead-broker
	@BUILD=$(BUILD) sh bench/broker-stream.sh
bench: bench-broker-stream
.PHONY: bench-broker-stream
# bench/broker-streams.sh: threads and RSS per open stream, 2,000 streams across 100 sessions.
bench-broker-streams: $(BIN)/bulkhead-broker test-programs
	@BUILD=$(BUILD) sh bench/broker-streams.sh
bench: bench-broker-streams
.PHONY: bench-broker-streams
# bench/broker-ws.sh: WebSocket echo round trips through the broker, with and without a
# credential, beside the same server reached directly.
bench-broker-ws: $(BIN)/bulkhead-broker
	@BUILD=$(BUILD) sh bench/broker-ws.sh
bench: bench-broker-ws
.PHONY: bench-broker-ws
# bench/broker-idle.sh: a shared broker's memory and threads with many idle guest connections
# (bench/idle_conns.c holds them), and whether every session is still served meanwhile.
$(BUILD)/bench/idle-conns: $(OBJ)/bench/idle_conns.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lhttp_parser -lpthread
bench-broker-idle: $(BUILD)/bench/idle-conns $(BIN)/bulkhead-broker $(BUILD)/tests/https-echo \
  $(BUILD)/tests/proxy-client
	@BUILD=$(BUILD) sh bench/broker-idle.sh
bench: bench-broker-idle
.PHONY: bench-broker-idle
# bench-vsock (vsock/vsock.mk) runs its guest side in a real session: bulkhead, kernel, images.
bench-vsock: all
# bench/nested.sh: inside L1, a KVM host with hardware semantics made under QEMU TCG
# (tests/nested/): boot phases, the engines side by side, and SESSIONS sessions in a row.
bench-nested: test-programs
	@BUILD=$(BUILD) sh bench/nested.sh $(NESTED_BENCH)
.PHONY: bench-nested
# bench/arm64-boot.sh: boot on arm64 KVM in the nested arm64 host, bulkhead-vmm beside QEMU
# -accel kvm with the same kernel and initramfs (README.md, "arm64").
bench-arm64:
	@BUILD=$(BUILD) sh bench/arm64-boot.sh
.PHONY: bench-arm64
# bench/oci-run.sh: a container through podman, ctr and docker with bulkhead-oci, beside crun,
# runc and `bulkhead run --image` in the same run.
bench-oci: all
	@BUILD=$(BUILD) RUNS=9 sh bench/oci-run.sh
.PHONY: bench-oci
# bench/serve-latency.sh: create-to-first-byte through `bulkhead serve`, pooled and cold, beside
# an exec in a running session and `bulkhead run` in the same run.
bench-serve: all
	@BUILD=$(BUILD) RUNS=15 sh bench/serve-latency.sh
.PHONY: bench-serve
# bench/serve-scope-latency.sh: create-to-first-byte of a credentialed HTTPS answer, pooled and
# cold with a scope, beside a pooled create without one and the same request in a session up.
bench-serve-scope: all $(BUILD)/tests/https-echo
	@BUILD=$(BUILD) RUNS=10 BURSTS=2 sh bench/serve-scope-latency.sh
.PHONY: bench-serve-scope
# bench/broker-grpc.sh: gRPC unary round trips through the broker (HTTP/2 on both sides),
# with and without a credential, beside the same server reached directly.
bench-broker-grpc: $(BIN)/bulkhead-broker $(BUILD)/tests/proxy-client
	@BUILD=$(BUILD) sh bench/broker-grpc.sh
bench: bench-broker-grpc
.PHONY: bench-broker-grpc
