#!/bin/sh
# bench/vsock-throughput.sh: host <-> guest stream throughput through bulkhead-vsock (QEMU TCG
# guest), next to the same byte pump over a host Unix socketpair measured in the same run.
# Each figure is timed by the receiver, first byte to EOF. Prints medians and ratios.
# Usage: BUILD=build RUNS=5 MIB=16 sh bench/vsock-throughput.sh
set -u
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
MIB=${MIB:-16}
BYTES=$((MIB * 1048576))
VS=$BUILD/bin/bulkhead-vsock
TOOL=$BUILD/tests/guest-tools/vsock-tool
INITRD=$BUILD/tests/guest-tools/initramfs-test.cpio
LIBDIR=$BUILD/lib/bulkhead
D=$(mktemp -d "${TMPDIR:-/tmp}/bulkhead-bench.XXXXXX")
trap 'rm -rf "$D"' EXIT
export VSOCK_TOOL_STATS=1

hexargs() { for a in "$@"; do printf '%s\0' "$a"; done | od -An -v -tx1 | tr -d ' \n'; }
# MB/s from "STATS recv BYTES MS" lines on stdin, one per line out.
rates() { awk '/STATS recv/ && $4 > 0 { printf "%.1f\n", $3 / 1048576 / ($4 / 1000) }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print 0 }'; }

"$VS" --socket "$D/vhost.sock" --guest-cid 3 --uds-path "$D/vsock.sock" 2> "$D/vsock.err" &
VPID=$!
while [ ! -S "$D/vhost.sock" ]; do sleep 0.05; done

# Host side of guest -> host: one listener per run, in turn.
( i=0; while [ $i -lt "$RUNS" ]; do
	"$TOOL" ulisten "$D/vsock.sock_1234" < /dev/null > /dev/null 2>> "$D/g2h.stats"
	i=$((i + 1)); done ) &
# Guest: RUNS uploads from a tmpfs file (busybox head from /dev/zero manages only ~25 MB/s
# under TCG, so a pipe from it would measure head), then RUNS listens for downloads.
script="export VSOCK_TOOL_STATS=1; head -c $BYTES /dev/zero > /tmp/up
i=0; while [ \$i -lt $RUNS ]; do vsock-tool connect 1234 < /tmp/up > /dev/null; i=\$((i + 1)); done
i=0; while [ \$i -lt $RUNS ]; do vsock-tool listen 5000 < /dev/null > /dev/null; i=\$((i + 1)); done"
qemu-system-x86_64 \
	-M microvm,acpi=off,x-option-roms=off,rtc=on,isa-serial=on,pit=on,pic=on,memory-backend=mem \
	-object memory-backend-memfd,id=mem,size=256M,share=on -m 256 -smp 1 \
	-global virtio-mmio.force-legacy=false -accel tcg -cpu max -nodefaults -no-user-config \
	-no-reboot -display none -monitor none -serial stdio \
	-chardev "socket,id=vs,path=$D/vhost.sock" -device vhost-user-vsock-device,chardev=vs \
	-kernel "$LIBDIR/vmlinux" -initrd "$INITRD" \
	-append "console=ttyS0 8250.nr_uarts=1 panic=-1 reboot=t rdinit=/init tsc=reliable no_timer_check bulkhead.argv=$(hexargs sh -c "$script")" \
	> "$D/console" 2> "$D/qemu.err" < /dev/null &
QPID=$!
# Host side of host -> guest: connect when the guest listens (retry: closed = not yet).
i=0
while [ $i -lt "$RUNS" ]; do
	if head -c $BYTES /dev/zero | "$TOOL" uconnect "$D/vsock.sock" 5000 > /dev/null 2> /dev/null; then
		i=$((i + 1))
	else
		sleep 0.05
	fi
	kill -0 $QPID 2>/dev/null || break
done
wait $QPID
wait $VPID

i=0
while [ $i -lt "$RUNS" ]; do "$TOOL" pair $BYTES 2>> "$D/pair.stats"; i=$((i + 1)); done

g2h=$(rates < "$D/g2h.stats" | median)
h2g=$(tr -d '\036' < "$D/console" | rates | median)
ref=$(rates < "$D/pair.stats" | median)
echo "vsock throughput, $MIB MiB per transfer, median of $RUNS (QEMU TCG guest):"
echo "  guest -> host  $g2h MB/s"
echo "  host -> guest  $h2g MB/s"
echo "  reference (host socketpair, same pump)  $ref MB/s"
awk -v a="$g2h" -v b="$h2g" -v r="$ref" 'BEGIN { if (r > 0) printf "  ratio to reference: guest->host %.4f, host->guest %.4f\n", a / r, b / r }'
