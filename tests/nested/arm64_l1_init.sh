#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# /init of the arm64 host (tests/nested/arm64.sh): Debian's arm64 kernel with KVM, under
# QEMU's TCG. Stage 1 copies the initramfs into a tmpfs and switch_roots (pivot_root, which
# the jail uses, refuses the initramfs root). Then the plan (arm64.plan= on the command line,
# words joined by commas): `vmm` runs the arm64 bulkhead-vmm on /dev/kvm directly, `sessions`
# runs bulkhead sessions under --engine kvm with the arm64 build in /bulkhead. Each run is
# reported as "arm64: NAME rc=N" followed by its output prefixed "| ", then "arm64: done",
# and the host powers off. The host side decides what passed; nothing is judged here.
[ "${1:-}" = stage2 ] || { . /tmpfs_root.sh && busybox_stage1 arm64; } # a tmpfs root, as the jail needs
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp
token=$(sed -n 's/.*bulkhead.token=\([0-9a-f]*\).*/\1/p' /proc/cmdline)
plan=$(sed -n 's/.*arm64.plan=\([a-z,]*\).*/\1/p' /proc/cmdline)
echo "arm64: kvm $(ls /dev/kvm 2> /dev/null || echo missing)"
up() { cut -d' ' -f1 /proc/uptime; }
# run NAME COMMAND...: one run, its exit status and output.
run() {
	name=$1
	shift
	t0=$(up)
	"$@" > /tmp/out 2>&1
	rc=$?
	echo "arm64: $name rc=$rc t0=$t0 t1=$(up)"
	grep -m 3 GIC /tmp/out | sed 's/^/| /' # the interrupt controller the guest found
	sed 's/^/| /' /tmp/out | tail -n 60
}
vmm() { # NAME ARGS...: bulkhead-vmm on its own
	_n=$1
	shift
	run "$_n" /bin/bulkhead-vmm "$@"
}
plan_vmm() {
	L2="--kernel /l2/Image --initrd /l2/initrd.gz --mem 256 --timeout-ms 300000"
	ARGS="console=ttyS0 rdinit=/init panic=-1 bulkhead.token=$token"
	vmm boot1 $L2 --cpus 1 --cmdline "$ARGS"
	vmm boot2 $L2 --cpus 2 --cmdline "$ARGS"
	vmm selftest $L2 --cpus 2 --jail-selftest --cmdline "$ARGS"
	# A virtio-fs share, served by Debian's arm64 virtiofsd (/q) over vhost-user.
	if [ -x /q/usr/lib/qemu/virtiofsd ]; then
		mkdir -p /share
		echo "from the arm64 host $token" > /share/in
		/q/lib/ld-linux-aarch64.so.1 --library-path /q/lib/aarch64-linux-gnu:/q/usr/lib/aarch64-linux-gnu \
			/q/usr/lib/qemu/virtiofsd --socket-path=/tmp/fs.sock -o source=/share -o cache=none -o sandbox=chroot \
			> /tmp/virtiofsd.log 2>&1 &
		i=0
		while [ ! -S /tmp/fs.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		vmm share $L2 --cpus 2 --virtio-fs /tmp/fs.sock,tag=share --cmdline "$ARGS bulkhead.share"
		echo "arm64: share out=$(cat /share/out 2> /dev/null)"
		tail -n 5 /tmp/virtiofsd.log | sed 's/^/arm64: virtiofsd: /'
	fi
	# Bad input: an Image without its magic, a file shorter than its header, too little RAM.
	head -c 32 /l2/Image > /tmp/short
	dd if=/l2/Image of=/tmp/nomagic bs=4096 count=1 2> /dev/null
	printf 'XXXX' | dd of=/tmp/nomagic bs=1 seek=56 conv=notrunc 2> /dev/null
	vmm nomagic --kernel /tmp/nomagic --mem 256 --cmdline "$ARGS"
	vmm short --kernel /tmp/short --mem 256 --cmdline "$ARGS"
	vmm small $L2 --mem 16 --cmdline "$ARGS"
	# Started with stderr closed, a guest that never ends is still stopped at --timeout-ms (the
	# VMM's own timeout line once went into an eventfd that took descriptor 2, and it spun).
	[ -e /l2/poke5.img ] && run closedout sh -c 'timeout 60 /bin/bulkhead-vmm --kernel /l2/poke5.img \
		--mem 64 --timeout-ms 3000 --cmdline x 2>&-; echo "status $?"'
	# The arm64 test guests (tests/guests/arm64/poke.S), if given.
	for c in 1 2 3 4 5; do
		limit=120000
		[ $c = 5 ] && limit=5000 # the guest that never ends
		[ -e /l2/poke$c.img ] && vmm poke$c --kernel /l2/poke$c.img --mem 64 --timeout-ms $limit --cmdline x
	done
}

# What sessions need of a host, once: cgroup v2 with every controller delegated (as on a
# systemd host), ptys, /dev/shm, loopback; the arm64 build in /bulkhead on PATH.
host_ready=
host_setup() {
	[ -n "$host_ready" ] && return
	host_ready=1
	mkdir -p /dev/pts /dev/shm /run /root /sys/fs/cgroup
	mount -t devpts -o ptmxmode=0666,mode=0620 devpts /dev/pts
	mount -t tmpfs -o mode=1777 shm /dev/shm
	mount -t cgroup2 cgroup2 /sys/fs/cgroup
	for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
		echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null
	done
	ip link set lo up
	export HOME=/root TMPDIR=/tmp PATH=/bulkhead/bin:/bin
}

plan_doctor() {
	host_setup
	run doctor bulkhead doctor
}

# Sessions as a user runs them, under --engine kvm, with Debian's arm64 virtiofsd at
# /usr/lib/qemu/virtiofsd. With /pki (a test CA, a certificate for localhost) and
# /bulkhead/tests/https-echo, a broker session too.
plan_sessions() {
	host_setup
	run session bulkhead run --engine kvm -- sh -c "echo hello $token from \$(uname -m) on \$(nproc) vCPU; exit 3"
	mkdir -p /w
	echo "from the host $token" > /w/in
	run work bulkhead run --engine kvm --cpus 2 --work /w -- sh -c "cat in; echo written in the guest $token > out"
	echo "arm64: work out=$(cat /w/out 2> /dev/null)"
	echo "piped $token" > /tmp/stdin
	run stdin sh -c 'bulkhead run --engine kvm -i -- sh -c "cat; echo stdin-done" < /tmp/stdin'
	run tty bulkhead run --engine kvm -t -- sh -c 'tty; echo tty-done'
	id=$(bulkhead start --engine kvm --cpus 2 2> /tmp/start.err)
	echo "arm64: start id=$id $(tail -n 3 /tmp/start.err)"
	run exec1 bulkhead exec "$id" -- sh -c 'echo exec $((6 * 7)) on $(nproc) vCPUs'
	run exec2 bulkhead exec "$id" -- sh -c 'exit 7'
	run stop bulkhead stop "$id"
	run gone bulkhead exec "$id" -- true
	run pause sh -c "id=\$(bulkhead start --engine kvm) && bulkhead pause \$id; echo pause=\$?; bulkhead stop \$id"
	[ -x /bulkhead/tests/https-echo ] && [ -r /pki/ca.pem ] && broker_session
}

# A token from the vault, injected by the session's broker toward an HTTPS upstream (https-echo
# with the test CA's certificate for localhost); the guest asks through its proxy.
broker_session() {
	secret="tok-arm64-$token-secret"
	/bulkhead/tests/https-echo --cert /pki/up.pem --key /pki/up.key --log /tmp/upstream.log \
		> /tmp/port 2> /tmp/echo.err &
	i=0
	while [ ! -s /tmp/port ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	port=$(cat /tmp/port)
	bulkhead vault init --vault /tmp/vault > /dev/null 2>&1
	printf '%s' "$secret" | bulkhead vault put api --vault /tmp/vault > /dev/null 2>&1
	cat > /tmp/scope.json << SCOPE
{ "secrets": [ { "name": "api", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $port,
                        "path_prefix": "/v1/", "allow_addresses": ["127.0.0.1"] } ] } ],
  "allow": [] }
SCOPE
	run broker bulkhead run --engine kvm --scope /tmp/scope.json --vault /tmp/vault \
		--ca-file /pki/ca.pem --audit /tmp/audit.log -- sh -c \
		"wget -q -O - http://localhost:$port/v1/items; echo; echo wget=\$?; env; grep -rl '$secret' /etc /root /tmp /run /init; true"
	echo "arm64: upstream $(grep -c "Authorization: Bearer $secret" /tmp/upstream.log) $(grep -c "$secret" /tmp/out)"
}

for step in $(echo "${plan:-vmm}" | tr , ' '); do
	"plan_$step"
done
echo "arm64: done"
poweroff -f
