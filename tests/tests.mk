# SPDX-License-Identifier: Apache-2.0
# tests/: unit tests (cmocka), end-to-end suites (real VMs), fuzzers (libFuzzer).
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

# The unit tests' objects need cmocka, a `run` package (ci/packages.txt).
$(OBJ)/tests/%.o: tests/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<
UNIT_LIBS := -lcmocka -lz -lhttp_parser -lwslay -lnghttp2 -lssl -lcrypto -ljansson -lexpat -lseccomp -luring -lmount
$(BUILD)/tests/%: $(OBJ)/tests/unit/%.o $(CLI_LIB) $(SESSION_LIB) $(IMAGE_LIB) $(JAIL_LIB) $(VMM_LIB) $(VMM_ARM64_LIB) $(VSOCK_LIB) $(BROKER_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(UNIT_LIBS)
# The VMM's allow-lists with each thread role's work (and a sanitizer build's run time).
$(BUILD)/tests/test_vmm_seccomp: $(VMM_SECCOMP_OBJS) $(SAN_OBJ)
$(BUILD)/tests/test_vmm_seccomp: UNIT_LIBS += -lseccomp
# bulkhead-vsock's allow-list with its loop's work (and a sanitizer build's run time).
$(BUILD)/tests/test_vsock_seccomp: $(OBJ)/vsock/seccomp.o $(SAN_OBJ)
$(BUILD)/tests/test_vsock_seccomp: UNIT_LIBS += -lseccomp
$(BUILD)/tests/test_vmm_arm64: UNIT_LIBS += -lfdt

# Fuzzers need clang; they are built and run briefly by `make test` as one suite.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
# Each fuzzer links the product sources it exercises (compiled with it, sanitizers on).
FUZZ_DEPS_fuzz_console_frame := lib/console_frame.c
FUZZ_DEPS_fuzz_agent_proto := lib/agent_proto.c lib/io.c session/exec_client.c lib/unix_listen.c
FUZZ_DEPS_fuzz_vsock_tx := vsock/device.c vsock/conn.c vsock/virtq.c vsock/vmem.c \
                           lib/unix_listen.c
FUZZ_DEPS_fuzz_virtio_mmio := vmm/virtio/mmio.c vmm/bus.c vmm/gmem.c vmm/log.c vmm/stopwait.c vmm/stop.c \
                              vmm/vm.c vmm/x86/vm_arch.c
# The VMM's vhost-user front end against a hostile back end (its log lines kept quiet there).
FUZZ_DEPS_fuzz_vu_front := vmm/virtio/vu_front.c vmm/virtio/vhost_user_dev.c vmm/virtio/mmio.c \
                           vmm/bus.c vmm/gmem.c vmm/vm.c vmm/stop.c vmm/x86/vm_arch.c lib/vhost_user.c
FUZZ_DEPS_fuzz_proxy_head := $(filter-out broker/harden.c broker/vault%.c broker/cred_source.c broker/token_%.c broker/github_app.c broker/aws_sts.c broker/control.c broker/session.c broker/loop%.c,$(BROKER_SRCS)) \
                             lib/json_where.c lib/json_strict.c lib/errbuf.c lib/io.c lib/relpath.c
FUZZ_LIBS_fuzz_proxy_head := -lhttp_parser -lwslay -lnghttp2 -lssl -lcrypto -ljansson -lpthread
# The loaders of the two policy layers: the global policy and a session's scope.
FUZZ_DEPS_fuzz_policy := broker/policy.c broker/policy_load.c broker/hostname.c broker/reqpath.c \
                         lib/json_where.c lib/json_strict.c lib/io.c
FUZZ_LIBS_fuzz_policy := -ljansson
FUZZ_DEPS_fuzz_scope := broker/rules.c broker/rules_grant.c broker/rules_kinds.c broker/rules_match.c broker/hostname.c broker/reqpath.c \
                        broker/policy.c broker/policy_load.c broker/decide.c lib/json_where.c \
                        lib/json_strict.c lib/errbuf.c lib/relpath.c lib/io.c
FUZZ_LIBS_fuzz_scope := -ljansson -lcrypto
# What the broker reads of a request an AWS key signs, and the signer (broker/aws_*.c).
FUZZ_DEPS_fuzz_aws := broker/aws_sigv4.c broker/aws_s3.c broker/aws_sts.c broker/token_http.c \
                      broker/cred.c broker/dest.c broker/upstream_tls.c broker/tls_resume.c broker/policy.c \
                      broker/policy_load.c broker/secbuf.c broker/rules.c broker/rules_match.c \
                      broker/rules_grant.c broker/rules_kinds.c broker/hostname.c broker/reqpath.c \
                      lib/json_where.c lib/json_strict.c lib/errbuf.c lib/relpath.c lib/io.c
FUZZ_LIBS_fuzz_aws := -ljansson -lexpat -lssl -lcrypto -lhttp_parser
# bulkhead-oci's reader of a bundle's config.json.
FUZZ_DEPS_fuzz_oci_bundle := oci/bundle.c
FUZZ_LIBS_fuzz_oci_bundle := -ljansson
FUZZ_DEPS_fuzz_response := $(FUZZ_DEPS_fuzz_proxy_head)
FUZZ_LIBS_fuzz_response := $(FUZZ_LIBS_fuzz_proxy_head)
# The snapshot file as --restore-fd reads it, and the device states it hands to restores.
FUZZ_DEPS_fuzz_snapshot := vmm/snapshot.c vmm/gmem.c vmm/uart.c vmm/x86/i8042.c vmm/bus.c \
                           vmm/log.c vmm/stopwait.c vmm/stop.c vmm/vm.c vmm/x86/vm_arch.c lib/errbuf.c \
                           lib/io.c
# The HTTP/1.1 text an HTTP/2 stream's request becomes (broker/h2_stream.c).
FUZZ_DEPS_fuzz_h2_stream := broker/h2_stream.c broker/h2_fields.c broker/proxy_error.c
FUZZ_LIBS_fuzz_h2_stream := -lhttp_parser -lnghttp2 -ljansson

# Secondary expansion picks the target's own list.
.SECONDEXPANSION:
$(BUILD)/fuzz/%: tests/fuzz/%.c $$(FUZZ_DEPS_$$*) | deps
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -I. $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ $^ -lz $(FUZZ_LIBS_$*)

.PHONY: unit-tests fuzz test-programs test-san test-tsan check
include tests/nested/nested.mk
unit-tests: $(UNIT_BINS)
fuzz: $(FUZZ_BINS)

# test-programs: everything the suites run but the fuzzers (add new test tools here).
# FUZZ_SECONDS bounds each fuzzer's run inside `make test`.
FUZZ_SECONDS ?= 15
test-programs: all $(UNIT_BINS)
test: test-programs $(FUZZ_BINS) | deps
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/run.sh

# `make check`: what a developer runs before every commit, in under a minute once built: the
# unit tests and a short pass of every fuzzer (its corpus, then CHECK_FUZZ_SECONDS of new
# inputs). No session starts; `make test` runs everything.
CHECK_FUZZ_SECONDS ?= 2
check: $(UNIT_BINS) $(FUZZ_BINS) | deps
	@BUILD=$(BUILD) FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) sh tests/run.sh unit/ fuzz/

# The sanitizer run (CI: .ci/run): everything built with ASan and UBSan into a build of its
# own, then the unit tests and the host-side suites (the broker's, the vsock back end's and
# the VMM's vhost-user front end; one session, so the jailed back end runs too), and the
# session API daemon with its clients against real sessions. The fuzzers
# are sanitized builds already and run in `make test`.
SAN_BUILD  ?= build-san
SAN_SUITES ?= unit/ e2e/test_broker_proxy e2e/test_broker_harden e2e/test_broker_session e2e/test_broker_scale \
              e2e/test_broker_resume e2e/test_broker_h2 e2e/test_broker_grpc e2e/test_approvals e2e/test_policy \
              e2e/test_broker_strict e2e/test_broker_audit e2e/test_scrub_oracle e2e/test_scrub_forms \
              e2e/test_vault e2e/test_vault_rotate e2e/test_broker_oauth e2e/test_broker_github_app e2e/test_broker_aws e2e/test_vsock e2e/test_vhost_user e2e/test_serve e2e/test_broker_stream_scale e2e/test_broker_stream_epoll
test-san:
	$(MAKE) BUILD=$(SAN_BUILD) SAN=address,undefined test-programs
	@BUILD=$(SAN_BUILD) sh tests/run.sh $(SAN_SUITES)

# The ThreadSanitizer run (CI: .ci/run): the session API daemon, the one program of many
# threads around shared tables (serve/serve.h names its lock order), built with TSan and run
# through its suites; a data race or a lock taken out of order ends it, and the suite fails.
# Only bulkhead-serve is instrumented: the rest of the tree ($(BUILD)'s programs, kernel and
# images) is linked in beside it, so a TSan build costs seconds, not a second tree.
TSAN_BUILD  ?= build-tsan
TSAN_SUITES ?= e2e/test_serve e2e/test_serve_clients
test-tsan: test-programs
	$(MAKE) BUILD=$(TSAN_BUILD) SAN=thread $(TSAN_BUILD)/bin/bulkhead-serve
	@sh tests/tsan_tree.sh $(BUILD) $(TSAN_BUILD)
	@BUILD=$(TSAN_BUILD) TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		sh tests/run.sh $(TSAN_SUITES)

# Test tools: small host programs the e2e suites call.
$(BUILD)/tests/frame-forge: $(OBJ)/tests/tools/frame_forge.o $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lz
test-programs: $(BUILD)/tests/frame-forge
$(BUILD)/tests/vhost-user-probe: $(OBJ)/tests/tools/vhost_user_probe.o $(VMM_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread
test-programs: $(BUILD)/tests/vhost-user-probe
# Ring restarts against the real bulkhead-vsock: the guest's driver (the test guest's own code)
# through bulkhead-vmm's transport, without KVM; and the host side of that guest's scenarios.
$(BUILD)/tests/vsock-restart-probe: $(OBJ)/tests/tools/vsock_restart_probe.o \
                                   $(OBJ)/tests/guests/vsock_drv.o $(VMM_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread
test-programs: $(BUILD)/tests/vsock-restart-probe
# A back end that stops answering at a chosen request (tests/e2e/test_vmm.sh, with KVM).
$(BUILD)/tests/vhost-user-mute: $(OBJ)/tests/tools/vhost_user_mute.o $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
test-programs: $(BUILD)/tests/vhost-user-mute
# The broker's proxy suite: a TLS echo upstream and a client that captures every byte.
$(BUILD)/tests/https-echo: $(OBJ)/tests/tools/https_echo.o $(OBJ)/tests/tools/echo_reflect.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lhttp_parser -lssl -lcrypto -lpthread -lz
$(BUILD)/tests/proxy-client: $(OBJ)/tests/tools/proxy_client.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lhttp_parser -lssl -lcrypto -lpthread
test-programs: $(BUILD)/tests/https-echo $(BUILD)/tests/proxy-client
# A guest trying to learn a secret from the response scrubber (tests/e2e/test_scrub_oracle.sh).
$(BUILD)/tests/scrub-probe: $(OBJ)/tests/tools/scrub_probe.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lhttp_parser
test-programs: $(BUILD)/tests/scrub-probe
# A real git smart-HTTP server (git http-backend behind TLS and one required Authorization).
$(BUILD)/tests/git-https-server: $(OBJ)/tests/tools/git_https_server.o $(OBJ)/tests/tools/git_https_cgi.o \
                                $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lhttp_parser -lssl -lcrypto
test-programs: $(BUILD)/tests/git-https-server
# Locked mounts in a share's virtiofsd namespace, tried from the host (test_share_rules.sh).
$(BUILD)/tests/mount-lock-check: $(OBJ)/tests/tools/mount_lock_check.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
test-programs: $(BUILD)/tests/mount-lock-check
# The jail step as sessions use it, around any program (tests/e2e/test_jail.sh).
$(BUILD)/tests/jail-probe: $(OBJ)/tests/tools/jail_probe.o $(JAIL_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
test-programs: $(BUILD)/tests/jail-probe
# Runs a command as the reaper of what it leaves behind (tests/e2e/test_teardown.sh).
$(BUILD)/tests/reap-check: $(OBJ)/tests/tools/reap_check.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
test-programs: $(BUILD)/tests/reap-check
# Connects Unix sockets onto chosen descriptors for a command (tests/e2e/test_vmm_jail.sh).
$(BUILD)/tests/fd-connect: $(OBJ)/tests/tools/fd_connect.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
test-programs: $(BUILD)/tests/fd-connect
# The work directory's files and tar streams (serve/), fetched through libmicrohttpd; lib/ again
# after them, for what they use of it.
$(BUILD)/tests/test_serve_files: $(OBJ)/serve/files.o $(OBJ)/serve/archive.o $(OBJ)/serve/archive_pack.o
$(BUILD)/tests/test_serve_files: UNIT_LIBS += $(LIB_A) -larchive -lmicrohttpd
# The table of a session request's fields as JSON (tests/e2e/test_request_schema.sh).
$(BUILD)/tests/request-schema: $(OBJ)/tests/tools/request_schema.o $(SESSION_LIB) $(IMAGE_LIB) \
                               $(JAIL_LIB) $(BROKER_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lz -lcrypto -ljansson -lhttp_parser -lseccomp -luring -lmount
test-programs: $(BUILD)/tests/request-schema
