# SPDX-License-Identifier: Apache-2.0
# tests/tools/oci_engines.sh: real container engines (podman, containerd's ctr, dockerd) driven
# with any OCI runtime binary, each with private state so nothing global is touched (sourced,
# POSIX sh; after tests/e2e/lib.sh or bench/lib.sh). Each *_start/oci_podman returns non-zero
# with one line on stderr saying why when that engine cannot run here, so a suite can skip.
# Usable under set -e (bench/oci-run.sh): the stop functions tolerate what is already gone.
#   oci_refs DIR            $OCI_CRUN, $OCI_RUNC: the reference runtimes, usable on this host
#   oci_log_runtime F REAL LOGDIR   F: a runtime recording each call to LOGDIR, then exec REAL
#   oci_podman ROOTFS       $OCI_IMAGE in a private podman store; oci_podman_cmd ARGS...;
#                           oci_podman_stop
#   oci_containerd_start DIR; oci_ctr_cmd ARGS...; oci_ctr_run RUNTIME ID CMD...;
#                           oci_containerd_stop
#   oci_dockerd_start DIR NAME PATH; oci_docker_cmd ARGS...; oci_dockerd_stop
# Host limits the engines' defaults exceed: the hard RLIMIT_NOFILE may be low and CAP_SYS_RESOURCE
# missing, so podman's and dockerd's default rlimits are set to what this host allows
# ($OCI_NOFILE, $OCI_NPROC); containerd's default spec asks only NOFILE 1024.

OCI_CACHE=${BULKHEAD_CACHE:-$HOME/.cache/bulkhead}/oci
# Podman records its run root in its database, so it must be the same path in every run.
OCI_RUNBASE=/run/bulkhead-engines
OCI_NOFILE=$(awk '/^Max open files/ { print $5 }' /proc/self/limits)
# Podman lowers its own NPROC limit to pid_max before starting conmon: the lower of the two.
OCI_NPROC=$(awk '/^Max processes/ { print $4 }' /proc/self/limits)
if [ "$OCI_NPROC" = unlimited ] || [ "$OCI_NPROC" -gt "$(cat /proc/sys/kernel/pid_max)" ]; then
	OCI_NPROC=$(cat /proc/sys/kernel/pid_max)
fi

# oci_fail REASON: one line on stderr; status 1.
oci_fail() {
	echo "$1" >&2
	return 1
}

# oci_key DIR: a key of DIR's content (names, types, sizes, modes, owners, times, link targets).
oci_key() {
	find "$1" -printf '%P %y %s %m %U %G %T@ %l\n' | LC_ALL=C sort | sha256sum | cut -c1-12
}

# oci_refs DIR: $OCI_RUNC and $OCI_CRUN. crun 1.8 refuses a hybrid cgroup host whose cgroup2
# hierarchy has any controller ("cgroups in hybrid mode not supported"); where that is so,
# $OCI_CRUN is a wrapper in DIR running crun in its own mount namespace with
# unified/cgroup.controllers covered by an empty file, changing nothing for anyone else.
oci_refs() {
	OCI_RUNC=$(command -v runc || echo /usr/sbin/runc)
	OCI_CRUN=$(command -v crun || echo /usr/bin/crun)
	if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2> /dev/null)" ]; then
		mkdir -p "$1" &&
			cat > "$1/crun-hybrid" <<- EOF &&
				#!/bin/sh
				# crun with this host's cgroup2 controllers hidden from it (tests/tools/oci_engines.sh)
				exec unshare -m --propagation private sh -c 'mount --bind /dev/null /sys/fs/cgroup/unified/cgroup.controllers && exec $OCI_CRUN "\$@"' crun "\$@"
			EOF
			chmod +x "$1/crun-hybrid" && OCI_CRUN=$1/crun-hybrid
	fi
}

# oci_log_runtime FILE REAL LOGDIR: writes FILE, a runtime that appends one record per call to
# LOGDIR/calls (its arguments, its descriptors, the environment variables engines pass, its
# parent) and copies the bundle's config.json to LOGDIR, then execs REAL with the same arguments.
oci_log_runtime() {
	mkdir -p "$3" && cat > "$1" <<- EOF && chmod +x "$1"
		#!/bin/sh
		# a runtime that records each call, then runs $2 (tests/tools/oci_engines.sh)
		# The descriptors the caller gave, read by a child with no redirection in this shell (sh
		# moves a redirected descriptor aside to 10 and up); 10 and up are this script's own.
		find /proc/\$\$/fd -mindepth 1 -fprintf "$3/fds.\$\$" ' %f=%l'
		{
			printf 'call:'; for a in "\$@"; do printf ' %s' "\$a"; done; echo
			echo "  fds:\$(cat "$3/fds.\$\$")"; rm -f "$3/fds.\$\$"
			echo "  env: \$(env | grep -E '^(_OCI|NOTIFY_SOCKET|LISTEN_|XDG_RUNTIME)' | tr '\n' ' ')"
			echo "  cwd: \$(pwd); parent: \$(tr '\0' ' ' < /proc/\$PPID/cmdline | cut -c1-160)"
		} >> "$3/calls"
		prev=
		for a in "\$@"; do
			case \$prev in
			--bundle | -b) cp "\$a/config.json" "$3/config.\$(date +%s%N).json" 2> /dev/null ;;
			esac
			prev=\$a
		done
		exec $2 "\$@"
	EOF
}


# _oci_run_made: the directories dockerd and containerd 1.6 make under /run whatever their
# own state directories (shim sockets in /run/containerd/s, /run/docker/plugins) that are not
# there yet. _oci_run_clean LIST: removes those of LIST that are empty again.
_oci_run_made() {
	for _d in /run/containerd /run/docker; do [ -e $_d ] || echo $_d; done
}
_oci_run_clean() {
	for _d in $1; do rmdir "$_d"/* "$_d" 2> /dev/null || :; done
	return 0
}

# _oci_rmdirs LIST: removes the cgroup directories of LIST, waiting up to 2 s for processes of
# a container just deleted to leave them.
_oci_rmdirs() {
	_i=0
	while [ $_i -lt 20 ]; do
		_left=
		for _d in $1; do [ -d "$_d" ] && ! rmdir "$_d" 2> /dev/null && _left=1; done
		[ -z "$_left" ] && return 0
		sleep 0.1
		_i=$((_i + 1))
	done
	echo "oci_engines: cgroups left behind: $(for _d in $1; do [ -d "$_d" ] && echo "$_d"; done | tr '\n' ' ')" >&2
}

# oci_podman ROOTFS: a podman store of its own under $OCI_CACHE, keyed by ROOTFS's content, with
# ROOTFS imported once as $OCI_IMAGE and kept between runs; its run root and podman's temporary
# directory under $OCI_RUNBASE. Nothing under /var/lib/containers or /run/libpod is used.
# Containers get no network (netns none: nothing to set up), rlimits this host allows, no
# conmon cgroup, events not logged.
oci_podman() {
	for _c in podman conmon; do
		command -v $_c > /dev/null || { oci_fail "the $_c command is missing (apt-get install $_c)"; return 1; }
	done
	[ -d "$1" ] || { oci_fail "no root file system at $1"; return 1; }
	_k=$(oci_key "$1")
	OCI_PODMAN_DIR=$OCI_CACHE/podman-$_k
	OCI_PODMAN_RUN=$OCI_RUNBASE/podman-$_k
	OCI_IMAGE=localhost/bulkhead-oci:$_k
	mkdir -p "$OCI_PODMAN_DIR/root" "$OCI_PODMAN_DIR/net" "$OCI_PODMAN_RUN/run" "$OCI_PODMAN_RUN/tmp" || {
		oci_fail "cannot make $OCI_PODMAN_DIR and $OCI_PODMAN_RUN"; return 1; }
	cat > "$OCI_PODMAN_DIR/containers.conf" <<- EOF2
		[containers]
		default_ulimits = ["nofile=$OCI_NOFILE:$OCI_NOFILE", "nproc=$OCI_NPROC:$OCI_NPROC"]
		netns = "none"
		cgroups = "no-conmon"
		log_driver = "k8s-file"
		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "none"
		tmp_dir = "$OCI_PODMAN_RUN/tmp"
		[network]
		network_config_dir = "$OCI_PODMAN_DIR/net"
	EOF2
	cat > "$OCI_PODMAN_DIR/storage.conf" <<- EOF2
		[storage]
		driver = "overlay"
		graphroot = "$OCI_PODMAN_DIR/root"
		runroot = "$OCI_PODMAN_RUN/run"
	EOF2
	# The cgroup parents podman makes (libpod_parent) are removed by oci_podman_stop unless
	# they were there before.
	_oci_podman_cg=$(for _d in /sys/fs/cgroup/*/; do [ -d "${_d}libpod_parent" ] || echo "${_d}libpod_parent"; done)
	if ! oci_podman_cmd image exists "$OCI_IMAGE" 2> /dev/null; then
		tar -C "$1" -c . | oci_podman_cmd import - "$OCI_IMAGE" > /dev/null 2> "$OCI_PODMAN_DIR/import.err" || {
			oci_fail "podman import of $1 failed: $(tail -n 1 "$OCI_PODMAN_DIR/import.err")"; return 1; }
		_oci_podman_prune "$_k"
	fi
	oci_podman_cmd run --rm --runtime "${OCI_RUNC:-runc}" "$OCI_IMAGE" true > /dev/null 2> "$OCI_PODMAN_RUN/err" || {
		oci_fail "podman cannot run a container here with runc: $(tail -n 1 "$OCI_PODMAN_RUN/err")"; return 1; }
}

# _oci_podman_prune KEY: removes the podman stores of other root file systems (stores are keyed
# by content, so an image rebuilt leaves the old one behind), unless something is mounted there.
_oci_podman_prune() {
	for _d in "$OCI_CACHE"/podman-*; do
		[ "$_d" = "$OCI_CACHE/podman-$1" ] && continue
		umount "$_d/root/overlay" 2> /dev/null || :
		grep -q " $_d/" /proc/mounts || rm -rf "$_d"
	done
}

# oci_podman_cmd ARGS...: podman on the store oci_podman made.
oci_podman_cmd() {
	CONTAINERS_CONF=$OCI_PODMAN_DIR/containers.conf CONTAINERS_STORAGE_CONF=$OCI_PODMAN_DIR/storage.conf \
		podman --root "$OCI_PODMAN_DIR/root" --runroot "$OCI_PODMAN_RUN/run" "$@"
}

# oci_podman_stop: removes the store's containers, its overlay mount and the cgroups podman
# made; the store and $OCI_IMAGE stay for the next run.
oci_podman_stop() {
	[ -n "${OCI_PODMAN_DIR:-}" ] || return 0
	oci_podman_cmd rm -af -t 0 > /dev/null 2>&1 || :
	umount "$OCI_PODMAN_DIR/root/overlay" 2> /dev/null || :
	_oci_rmdirs "$_oci_podman_cg"
	return 0
}

# oci_containerd_start DIR: a containerd of its own (root, state, socket under DIR; no CRI
# plugin, no metrics or debug listener) with $OCI_IMAGE imported from oci_podman's store (run
# oci_podman first) as $OCI_CTR_IMAGE in namespace bulkhead-oci. Its shims' runtime state and
# I/O fifos go under DIR too (oci_ctr_run passes --runc-root, --fifo-dir); containers' cgroups
# are /bulkhead-oci/ID, their parent removed at the stop when this made it.
oci_containerd_start() {
	command -v containerd > /dev/null && command -v ctr > /dev/null && command -v containerd-shim-runc-v2 > /dev/null ||
		{ oci_fail "containerd, ctr or containerd-shim-runc-v2 is missing (apt-get install containerd)"; return 1; }
	[ -n "${OCI_IMAGE:-}" ] || { oci_fail "oci_containerd_start: no image (run oci_podman first)"; return 1; }
	OCI_CTR_DIR=$1
	OCI_CTR_SOCK=$1/containerd.sock
	OCI_CTR_NS=bulkhead-oci
	mkdir -p "$1/root" "$1/state" "$1/runc" "$1/fifo" || { oci_fail "cannot make $1"; return 1; }
	_oci_ctr_run=$(_oci_run_made)
	_oci_ctr_cg=$(for _d in /sys/fs/cgroup/*/; do [ -d "$_d$OCI_CTR_NS" ] || echo "$_d$OCI_CTR_NS"; done)
	cat > "$1/config.toml" <<- EOF2
		version = 2
		root = "$1/root"
		state = "$1/state"
		disabled_plugins = ["io.containerd.grpc.v1.cri"]
		[grpc]
		  address = "$OCI_CTR_SOCK"
		[ttrpc]
		  address = "$OCI_CTR_SOCK.ttrpc"
		[debug]
		  address = ""
		[metrics]
		  address = ""
	EOF2
	containerd --config "$1/config.toml" > "$1/containerd.log" 2>&1 &
	OCI_CTR_PID=$!
	_i=0
	until ctr -a "$OCI_CTR_SOCK" version > /dev/null 2>&1; do
		_i=$((_i + 1))
		if [ $_i -gt 100 ] || ! kill -0 "$OCI_CTR_PID" 2> /dev/null; then
			oci_fail "containerd did not start: $(tail -n 1 "$1/containerd.log")"
			oci_containerd_stop
			return 1
		fi
		sleep 0.1
	done
	oci_podman_cmd save --format docker-archive -o "$1/image.tar" "$OCI_IMAGE" > /dev/null 2> "$1/err" &&
		oci_ctr_cmd images import "$1/image.tar" > /dev/null 2>> "$1/err" || {
		oci_fail "importing $OCI_IMAGE into containerd failed: $(tail -n 1 "$1/err")"
		oci_containerd_stop
		return 1
	}
	rm -f "$1/image.tar"
	OCI_CTR_IMAGE=$OCI_IMAGE
	oci_ctr_run "${OCI_RUNC:-runc}" bulkhead-oci-check true > /dev/null 2> "$1/err" || {
		oci_fail "containerd cannot run a container here with runc: $(tail -n 1 "$1/err")"
		oci_containerd_stop
		return 1
	}
}

# oci_ctr_cmd ARGS...: ctr on the containerd oci_containerd_start made.
oci_ctr_cmd() { ctr -a "$OCI_CTR_SOCK" -n "$OCI_CTR_NS" "$@"; }

# oci_ctr_run RUNTIME ID [CTR-RUN-OPTIONS...] -- CMD...: `ctr run --rm` (without --rm when the
# options hold -d) of $OCI_CTR_IMAGE through the io.containerd.runc.v2 shim with RUNTIME as its
# runc (a Kubernetes RuntimeClass's path); its status is the command's. Without --, everything
# after ID is the command.
oci_ctr_run() {
	_rt=$1 _id=$2
	shift 2
	_opts=--rm
	case " $* " in
	*" -- "*)
		while [ "$1" != -- ]; do
			case $1 in -d | --detach) _opts=${_opts#--rm} ;; esac
			_opts="$_opts $1"
			shift
		done
		shift ;;
	esac
	# shellcheck disable=SC2086 # the options are words
	oci_ctr_cmd run --runc-binary "$_rt" --runc-root "$OCI_CTR_DIR/runc" --fifo-dir "$OCI_CTR_DIR/fifo" $_opts "$OCI_CTR_IMAGE" "$_id" "$@"
}

# oci_containerd_stop: kills what is left in the namespace, stops containerd and its shims,
# and unmounts what it mounted under its DIR.
oci_containerd_stop() {
	[ -n "${OCI_CTR_PID:-}" ] || return 0
	for _t in $(oci_ctr_cmd tasks ls -q 2> /dev/null); do
		oci_ctr_cmd tasks kill -s KILL "$_t" > /dev/null 2>&1 || :
		oci_ctr_cmd tasks delete -f "$_t" > /dev/null 2>&1 || :
	done
	for _c in $(oci_ctr_cmd containers ls -q 2> /dev/null); do oci_ctr_cmd containers delete "$_c" > /dev/null 2>&1 || :; done
	kill "$OCI_CTR_PID" 2> /dev/null || :
	wait "$OCI_CTR_PID" 2> /dev/null || :
	for _m in $(awk -v d="$OCI_CTR_DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$_m" 2> /dev/null || umount -l "$_m" || :
	done
	_oci_run_clean "$_oci_ctr_run"
	_oci_rmdirs "$_oci_ctr_cg"
	OCI_CTR_PID=
	return 0
}

# oci_dockerd_start DIR [NAME PATH]...: a dockerd of its own (data root, exec root, pid file and
# socket under DIR, with the containerd it starts itself there) knowing each runtime NAME at PATH
# (`docker run --runtime NAME`; runc is its default), with
# $OCI_IMAGE loaded from oci_podman's store (run oci_podman first). No bridge, no iptables;
# default ulimits this host allows; containers' cgroups under /bulkhead-oci-docker, removed at
# the stop when this made it. Always /usr/bin/docker and /usr/sbin/dockerd: another docker
# client may come first on PATH.
oci_dockerd_start() {
	for _c in /usr/sbin/dockerd /usr/bin/docker; do
		[ -x $_c ] || { oci_fail "$_c is missing (apt-get install docker.io)"; return 1; }
	done
	[ -n "${OCI_IMAGE:-}" ] || { oci_fail "oci_dockerd_start: no image (run oci_podman first)"; return 1; }
	OCI_DOCKER_DIR=$1
	OCI_DOCKER_SOCK=$1/docker.sock
	mkdir -p "$1/data" "$1/exec" || { oci_fail "cannot make $1"; return 1; }
	_oci_docker_run=$(_oci_run_made)
	_oci_docker_cg=$(for _d in /sys/fs/cgroup/*/; do [ -d "${_d}bulkhead-oci-docker" ] || echo "${_d}bulkhead-oci-docker"; done)
	_rts=
	shift
	while [ $# -ge 2 ]; do
		_rts="$_rts${_rts:+, }\"$1\": { \"path\": \"$2\" }"
		shift 2
	done
	set -- "$OCI_DOCKER_DIR"
	cat > "$1/daemon.json" <<- EOF2
		{
			"runtimes": { $_rts },
			"default-ulimits": {
				"nofile": { "Name": "nofile", "Soft": $OCI_NOFILE, "Hard": $OCI_NOFILE },
				"nproc": { "Name": "nproc", "Soft": $OCI_NPROC, "Hard": $OCI_NPROC }
			},
			"cgroup-parent": "/bulkhead-oci-docker",
			"exec-opts": ["native.cgroupdriver=cgroupfs"],
			"bridge": "none", "iptables": false, "ip6tables": false, "ip-forward": false,
			"ip-masq": false, "userland-proxy": false
		}
	EOF2
	/usr/sbin/dockerd --config-file "$1/daemon.json" --data-root "$1/data" --exec-root "$1/exec" \
		--pidfile "$1/dockerd.pid" -H "unix://$OCI_DOCKER_SOCK" > "$1/dockerd.log" 2>&1 &
	OCI_DOCKER_PID=$!
	_i=0
	until oci_docker_cmd version > /dev/null 2>&1; do
		_i=$((_i + 1))
		if [ $_i -gt 300 ] || ! kill -0 "$OCI_DOCKER_PID" 2> /dev/null; then
			oci_fail "dockerd did not start: $(grep -E 'level=(error|fatal)' "$1/dockerd.log" | tail -n 1)"
			oci_dockerd_stop
			return 1
		fi
		sleep 0.1
	done
	oci_podman_cmd save --format docker-archive -o "$1/image.tar" "$OCI_IMAGE" > /dev/null 2> "$1/err" &&
		oci_docker_cmd load -i "$1/image.tar" > /dev/null 2>> "$1/err" || {
		oci_fail "loading $OCI_IMAGE into dockerd failed: $(tail -n 1 "$1/err")"
		oci_dockerd_stop
		return 1
	}
	rm -f "$1/image.tar"
	oci_docker_cmd run --rm --network none "$OCI_IMAGE" true > /dev/null 2> "$1/err" || {
		oci_fail "dockerd cannot run a container here with runc: $(tail -n 1 "$1/err")"
		oci_dockerd_stop
		return 1
	}
}

# oci_docker_cmd ARGS...: Debian's docker client on the dockerd oci_dockerd_start made.
oci_docker_cmd() { /usr/bin/docker -H "unix://$OCI_DOCKER_SOCK" "$@"; }

# oci_dockerd_stop: removes its containers, stops dockerd (which stops its containerd) and
# unmounts what it mounted under its DIR.
oci_dockerd_stop() {
	[ -n "${OCI_DOCKER_PID:-}" ] || return 0
	_cs=$(oci_docker_cmd ps -aq 2> /dev/null) || :
	# shellcheck disable=SC2086 # container ids are words
	[ -z "$_cs" ] || oci_docker_cmd rm -f $_cs > /dev/null 2>&1 || :
	kill "$OCI_DOCKER_PID" 2> /dev/null || :
	wait "$OCI_DOCKER_PID" 2> /dev/null || :
	for _m in $(awk -v d="$OCI_DOCKER_DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$_m" 2> /dev/null || umount -l "$_m" || :
	done
	_oci_rmdirs "$_oci_docker_cg"
	_oci_run_clean "$_oci_docker_run"
	OCI_DOCKER_PID=
	return 0
}
