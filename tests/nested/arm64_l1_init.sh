#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# /init of the arm64 host (tests/nested/arm64.sh): Debian's arm64 kernel with KVM, under
# QEMU's TCG. Runs the arm64 bulkhead-vmm on /dev/kvm and reports each run as "arm64: NAME
# rc=N" followed by its output prefixed "| ", then "arm64: done", and powers off. The host
# side decides what passed; nothing is judged here.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp
token=$(sed -n 's/.*bulkhead.token=\([0-9a-f]*\).*/\1/p' /proc/cmdline)
echo "arm64: kvm $(ls /dev/kvm 2> /dev/null || echo missing)"
up() { cut -d' ' -f1 /proc/uptime; }
# run NAME ARGS...: one bulkhead-vmm run, its exit status and output.
run() {
	name=$1
	shift
	t0=$(up)
	/bin/bulkhead-vmm "$@" > /tmp/out 2>&1
	rc=$?
	echo "arm64: $name rc=$rc t0=$t0 t1=$(up)"
	grep -m 3 GIC /tmp/out | sed 's/^/| /' # the interrupt controller the guest found
	sed 's/^/| /' /tmp/out | tail -n 60
}
L2="--kernel /l2/Image --initrd /l2/initrd.gz --mem 256 --timeout-ms 300000"
ARGS="console=ttyS0 rdinit=/init panic=-1 bulkhead.token=$token"
run boot1 $L2 --cpus 1 --cmdline "$ARGS"
run boot2 $L2 --cpus 2 --cmdline "$ARGS"
run selftest $L2 --cpus 2 --jail-selftest --cmdline "$ARGS"
# A virtio-fs share, served by Debian's arm64 virtiofsd (/q) over vhost-user.
if [ -x /q/usr/lib/qemu/virtiofsd ]; then
	mkdir -p /share
	echo "from the arm64 host $token" > /share/in
	/q/lib/ld-linux-aarch64.so.1 --library-path /q/lib/aarch64-linux-gnu:/q/usr/lib/aarch64-linux-gnu \
		/q/usr/lib/qemu/virtiofsd --socket-path=/tmp/fs.sock -o source=/share -o cache=none -o sandbox=chroot \
		> /tmp/virtiofsd.log 2>&1 &
	i=0
	while [ ! -S /tmp/fs.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	run share $L2 --cpus 2 --virtio-fs /tmp/fs.sock,tag=share --cmdline "$ARGS bulkhead.share"
	echo "arm64: share out=$(cat /share/out 2> /dev/null)"
	tail -n 5 /tmp/virtiofsd.log | sed 's/^/arm64: virtiofsd: /'
fi
# Bad input: an Image without its magic, a file shorter than its header, too little RAM.
head -c 32 /l2/Image > /tmp/short
dd if=/l2/Image of=/tmp/nomagic bs=4096 count=1 2> /dev/null
printf 'XXXX' | dd of=/tmp/nomagic bs=1 seek=56 conv=notrunc 2> /dev/null
run nomagic --kernel /tmp/nomagic --mem 256 --cmdline "$ARGS"
run short --kernel /tmp/short --mem 256 --cmdline "$ARGS"
run small $L2 --mem 16 --cmdline "$ARGS"
# The arm64 test guests (tests/guests/arm64/poke.S), if given.
for c in 1 2 3 4 5; do
	limit=120000
	[ $c = 5 ] && limit=5000 # the guest that never ends
	[ -e /l2/poke$c.img ] && run poke$c --kernel /l2/poke$c.img --mem 64 --timeout-ms $limit --cmdline x
done
echo "arm64: done"
poweroff -f
