# SPDX-License-Identifier: Apache-2.0
# Sourced by L1 suites: bb_image CACHE writes an image named "bb" into CACHE's image store by
# hand, in the store's documented format (image/image.h): a busybox root, /etc/motd "from the
# image", user 1000 with HOME /home/app, GREETING=hi. L1 has no skopeo or mmdebstrap to make
# one (the e2e suite test_image_session builds real ones on the host). Sets $img to its dir.
bb_image() {
	img=$1/images/sha256/$(printf '%064d' 1)
	mkdir -p "$img/rootfs/bin" "$img/rootfs/etc" "$img/rootfs/home/app" "$1/images/names"
	cp /usr/bin/busybox "$img/rootfs/bin/busybox"
	for a in sh cat id pwd echo ls rm sleep; do ln -s busybox "$img/rootfs/bin/$a"; done
	echo "from the image" > "$img/rootfs/etc/motd"
	cat > "$img/image.json" << JSON
{ "digest": "sha256:$(printf '%064d' 1)", "name": "bb", "source": "test", "created": "2026-01-01T00:00:00Z",
  "size": 1, "config": { "env": ["PATH=/bin", "HOME=/home/app", "GREETING=hi"], "cwd": "/home/app",
  "uid": 1000, "gid": 1000, "gids": [], "cmd": ["/bin/sh"] } }
JSON
	ln -s "../sha256/$(printf '%064d' 1)" "$1/images/names/bb"
	chown 1000:1000 "$img/rootfs/home/app"
}
