# bench/: performance, always side by side with a reference measured in the same run.
BENCH_RUNS ?= 20
bench: all
	@BUILD=$(BUILD) RUNS=$(BENCH_RUNS) sh bench/session-start.sh
	@BUILD=$(BUILD) sh bench/share-io.sh
