#!/usr/bin/env bash
# `make test-cgroup2` (also a step of `make test`): the plugin boxes (docs/agent.md,
# "Resource limits") on a kernel whose cgroup v2 holds every controller.
#
# The build machines mount cgroups "hybrid": the memory, cpu and pids controllers sit in
# v1 hierarchies, and the unified (v2) one has none, so there the boxes take their
# limits from v1, and the v2 code (memory.max, cpu.max, pids.max, memory.oom.group,
# enabling controllers down a delegated cgroup) would never run. This leg boots Debian's
# cloud kernel in QEMU (software emulation; no KVM needed) with cgroup_no_v1=all and a
# busybox initramfs, and runs there, as root in a pure v2 machine:
#
#   unit         agent/internal/limits, every test
#   end to end   integration's TestBox* tests (a plugin over its memory limit, a fork
#                bomb, a process that double-forked away, an agent in a delegated
#                cgroup), on binaries built here beforehand (the machine has no Go)
#
# with YUZU_BOXES_REQUIRED=1, so a test that finds no boxes there fails instead of
# skipping. The kernel comes from Debian's archive as a package (apt-get download) and
# is unpacked under .cache/cgroup2: nothing is installed into /boot. Each part's go
# test -json stream comes back on a serial port of its own and goes through testreport,
# so the summary has the usual counts. A machine that cannot run the leg (not x86_64)
# says so by name.
#
# Usage: scripts/test-cgroup2.sh [SUMMARY_FILE]   (make test passes its summary file)
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

outer=${1:-}
record() {
	say "$1"
	if [[ -n $outer ]]; then echo "$1" >>"$outer"; fi
}
# counted LINE is record for testreport's summary line, which testreport has printed.
counted() {
	if [[ -n $outer ]]; then echo "$1" >>"$outer"; fi
}

# Its bounded steps (lib.sh) are named as this leg's.
LEG=cgroup2

if [[ $(uname -m) != x86_64 ]]; then
	record "SKIP cgroup2 leg: cannot run here: it boots an amd64 kernel, and this machine is $(uname -m)"
	exit 0
fi
if ! bounded "install QEMU and busybox" 900 scripts/deps.sh cgroup2; then
	record "FAIL cgroup2 set-up: QEMU or busybox could not be installed (above); no test ran"
	exit 1
fi
if [[ ! -x $TOOLS_BIN/testreport ]]; then
	bounded "build testreport" 300 tools/install.sh >/dev/null || true
fi

VM_DIR=$ROOT/.cache/cgroup2
mkdir -p "$VM_DIR"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# kernel prints the path of the cached Debian cloud kernel, downloading it first if
# needed. The cloud flavour has what the machine needs built in (serial console,
# cgroup controllers, initramfs) and no modules to load.
kernel() {
	local k
	k=$(find "$VM_DIR/kernel/boot" -name 'vmlinuz-*' -print -quit 2>/dev/null || true)
	if [[ -n $k ]]; then
		echo "$k"
		return
	fi
	local pkg
	pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	if [[ -z $pkg ]]; then
		timeout 600 apt-get update -qq >&2 || true
		pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	fi
	if [[ -z $pkg ]]; then
		warn "cgroup2: Debian's archive names no linux-image-cloud-amd64 kernel"
		return 1
	fi
	rm -rf "$VM_DIR/deb" "$VM_DIR/kernel"
	mkdir -p "$VM_DIR/deb"
	(cd "$VM_DIR/deb" && bounded "download $pkg" 600 apt-get -o APT::Sandbox::User=root download -q "$pkg" >&2) || return 1
	dpkg-deb -x "$VM_DIR"/deb/*.deb "$VM_DIR/kernel" || return 1
	rm -rf "$VM_DIR/deb"
	find "$VM_DIR/kernel/boot" -name 'vmlinuz-*' -print -quit
}

start=$SECONDS
if ! vmlinuz=$(kernel) || [[ -z $vmlinuz ]]; then
	record "FAIL cgroup2 set-up: no kernel to boot (above); no test ran"
	exit 1
fi
say "cgroup2: kernel $vmlinuz"

# The machine has no C library: everything is built static (lib.sh sets CGO_ENABLED=0,
# which the binaries the end-to-end test builds inherit).
export CGO_ENABLED=0
root=$work/root
mkdir -p "$root"/{bin,usr/bin,proc,sys,dev,tmp,work/bin}
if ! { bounded "build the limits test" 600 go test -c -o "$root/work/limits.test" ./agent/internal/limits &&
	bounded "build the end-to-end test" 600 go test -c -o "$root/work/integration.test" ./integration &&
	(cd integration && bounded "build the binaries it drives" 600 env YUZU_INTEGRATION_BIN="$root/work/bin" YUZU_INTEGRATION_BUILD_ONLY=1 "$root/work/integration.test") &&
	bounded "build test2json" 300 go build -o "$root/work/test2json" cmd/test2json; }; then
	record "FAIL cgroup2 build: the test binaries did not build (above); no test ran"
	exit 1
fi
cp /bin/busybox "$root/bin/busybox"
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
# The machine's first process: mounts what the tests need, runs each part with its go
# test -json stream on a serial port of its own, says how each ended, powers off.
/bin/busybox --install -s /bin
ln -s /bin/busybox /usr/bin/setsid
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up
echo "cgroup2: controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
export PATH=/bin:/usr/bin HOME=/tmp TMPDIR=/tmp YUZU_BOXES_REQUIRED=1
cd /work
part() {
	port=$1
	shift
	stty -F "$port" raw -echo
	"$@" >"$port" 2>&1
	echo "cgroup2: exit $? $port"
}
part /dev/ttyS1 ./test2json -t -p github.com/yuzugo/yuzu/agent/internal/limits ./limits.test -test.v=test2json -test.timeout=10m
cd /tmp
# One test at a time: emulated cores are slow, and plugins of several tests starting at
# once on a loaded host ran out of the agent's 10 s start time (seen once, load 5).
YUZU_INTEGRATION_BIN=/work/bin part /dev/ttyS2 /work/test2json -t -p github.com/yuzugo/yuzu/integration /work/integration.test -test.v=test2json -test.run '^TestBox' -test.parallel=1 -test.timeout=15m
sync
poweroff -f
EOF
chmod 755 "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$work/initrd.gz"
say "cgroup2: built and packed in $((SECONDS - start))s ($(du -m "$work/initrd.gz" | cut -f1) MiB initramfs)"

# Software emulation: slow, but the same on every x86_64 machine, KVM or not. Three
# GiB leave room for the 2 GiB allocation the memory test makes before its 512 MiB
# limit stops it. An init that dies panics the kernel, which then reboots, which
# -no-reboot turns into QEMU's exit.
boot=$SECONDS
rc=0
bounded "run the virtual machine" 1500 qemu-system-x86_64 -accel tcg -m 3072 -smp 2 \
	-display none -monitor none -no-reboot \
	-kernel "$vmlinuz" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 rdinit=/init cgroup_no_v1=all panic=-1 quiet" \
	-serial "file:$work/console.log" -serial "file:$work/unit.json" -serial "file:$work/e2e.json" || rc=$?
vm_secs=$((SECONDS - boot))
say "cgroup2: the virtual machine ran for ${vm_secs}s (exit $rc)"
# The machine's console and both streams stay for a look after the run.
rm -rf "$VM_DIR/last-run"
mkdir -p "$VM_DIR/last-run"
cp "$work"/console.log "$work"/unit.json "$work"/e2e.json "$VM_DIR/last-run/" 2>/dev/null || true
grep -a "^cgroup2:" "$work/console.log" | tr -d "\r" || true
if ((rc != 0)); then
	tail -40 "$work/console.log" >&2
fi

failed=0
# report NAME JSON PORT: one part's stream through testreport, and how it ended.
report() {
	local name=$1 json=$2 port=$3 one=$work/$1.summary st
	set +e
	"$TOOLS_BIN/testreport" -label "cgroup2 $name" -summary "$one" <"$json"
	st=$?
	set -e
	if [[ ! -s $one ]]; then
		record "FAIL cgroup2 $name: no test output came back from the machine"
		failed=1
		return
	fi
	counted "$(cat "$one") (one ${vm_secs}s machine run for both parts)"
	if ((st != 0)); then
		failed=1
	elif ! grep -aq "cgroup2: exit 0 $port" "$work/console.log"; then
		record "FAIL cgroup2 $name: the test binary did not exit 0 although no test failed ($(grep -a "$port" "$work/console.log" || echo "no exit line"))"
		failed=1
	fi
}
report unit "$work/unit.json" /dev/ttyS1
report "end to end" "$work/e2e.json" /dev/ttyS2
say "cgroup2: done in $((SECONDS - start))s; the machine's console and test streams are in ${VM_DIR#"$ROOT"/}/last-run"
exit "$failed"
