# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # sourced by scripts/test-packages.sh, which sets and reads these
# The deb leg of scripts/test-packages.sh (sourced by it: leg_deb): the .deb under real
# systemd, in a virtual machine that also carries the cgroup v2 tests (the plugin boxes
# on a kernel whose cgroup v2 holds every controller; docs/agent.md "Resource limits").
#
# The build machines mount cgroups "hybrid": memory, cpu and pids sit in v1
# hierarchies, so there the boxes take their limits from v1, and the v2 code
# (memory.max, cpu.max, pids.max, memory.oom.group, controllers handed down a delegated
# cgroup) would never run. In the machine, booted with cgroup_no_v1=all, it does: as
# root, agent/internal/limits (every test) and integration's TestBox* tests, on
# binaries built here beforehand, with YUZU_BOXES_REQUIRED=1, so a test that finds no
# boxes fails instead of skipping. Their go test -json streams come back on serial
# ports of their own and go through testreport, so the summary has the usual counts.
# Then scripts/packages-vm.sh's package checks, one line each on another port.
#
# The machine is Debian 12 with systemd, made with mmdebstrap from Debian's archive and
# booted by QEMU (software emulation, no KVM needed) with Debian's cloud kernel (a
# package from Debian's archive, unpacked, never installed): its file system is the
# initramfs, so the kernel needs no disk driver (the cloud kernel has virtio-blk only
# as a module), and systemd runs as PID 1 from it with the cgroup v2 hierarchy alone.
# Both are cached outside the clone, in $CACHE (default /var/cache/yuzu-test): the
# system in debian12-systemd-<the first 12 hex digits of its recipe's SHA-256>/, so a
# changed recipe makes a new one and a fresh clone on the same machine (CI's) reuses
# it; the kernel in kernel/<package>/.
#
# Each run appends a small second archive to the initramfs (the kernel unpacks them in
# turn): the three packages, yuzu-testserver, the test binaries, packages-vm.sh and the
# unit that runs it.
#
# Bounded as the cgroup v2 leg was: one virtual CPU (with two, one CI run's machine
# went silent for 25 minutes in its first test, and emulated machines with several
# CPUs are reported to lose an inter-CPU interrupt now and then; one CPU has none to
# lose), the machine's time limited (DEB_LIMIT), a console silent for DEB_STALL seconds
# (the script says "alive" every 10 s) taken for a stopped machine, whose CPUs'
# registers QEMU's monitor prints before it is booted once more (WARN in the summary).
# A machine that runs but whose tests hang or fail is not booted again: that is the
# tests' answer. Three GiB leave room for the 2 GiB allocation the memory test makes
# before its 512 MiB limit stops it.

# The recipe of the machine's file system. Its text is what the cache is keyed by.
# Documentation is left out of what mmdebstrap installs (a smaller archive), but the
# dpkg setting that does it is removed afterwards: the packages the leg installs get
# their files as on any Debian system, and dpkg -V sees them all.
deb_recipe() {
	cat <<-'EOF'
		mmdebstrap --variant=minbase --include=systemd-sysv,procps --mode=root \
			--dpkgopt=path-exclude=/usr/share/man/* --dpkgopt=path-exclude=/usr/share/locale/* \
			--dpkgopt=path-exclude=/usr/share/doc/* \
			--customize-hook='echo yuzu-test >"$1/etc/hostname"' \
			--customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer serial-getty@ttyS0.service getty@tty1.service' \
			--customize-hook='rm -f "$1/etc/dpkg/dpkg.cfg.d/99mmdebstrap"' \
			bookworm "$DEST" http://deb.debian.org/debian
		(cd "$DEST" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$DEST.cpio"
	EOF
}

# deb_rootfs prints the cached file system's archive, making it first if needed.
deb_rootfs() {
	local hash dir
	hash=$(deb_recipe | sha256sum | cut -c1-12)
	dir=$CACHE/debian12-systemd-$hash
	if [[ -s $dir/rootfs.cpio ]]; then
		echo "$dir/rootfs.cpio"
		return 0
	fi
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	say "deb: making the Debian 12 system (mmdebstrap; cached in $dir)" >&2
	if ! DEST=$dir.tmp/rootfs bounded "mmdebstrap" 900 bash -c "$(deb_recipe)" </dev/null >"$dir.tmp.log" 2>&1; then
		tail -n 30 "$dir.tmp.log" >&2
		rm -rf "$dir.tmp"
		return 1
	fi
	rm -rf "$dir.tmp/rootfs"
	deb_recipe >"$dir.tmp/recipe"
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
	rm -f "$dir.tmp.log"
	echo "$dir/rootfs.cpio"
}

# deb_kernel prints the cached Debian cloud kernel, downloading its package first if
# needed (unpacked, never installed).
deb_kernel() {
	local pkg k
	pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	if [[ -z $pkg ]]; then
		timeout 600 apt-get update -qq >&2 || true
		pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	fi
	if [[ -z $pkg ]]; then
		warn "deb: Debian's archive names no linux-image-cloud-amd64 kernel"
		return 1
	fi
	k=$(find "$CACHE/kernel/$pkg/boot" -name 'vmlinuz-*' -print -quit 2>/dev/null || true)
	if [[ -n $k ]]; then
		echo "$k"
		return 0
	fi
	rm -rf "$CACHE/kernel/$pkg.tmp"
	mkdir -p "$CACHE/kernel/$pkg.tmp/deb"
	(cd "$CACHE/kernel/$pkg.tmp/deb" && bounded "download $pkg" 600 apt-get -o APT::Sandbox::User=root download -q "$pkg" >&2) || return 1
	dpkg-deb -x "$CACHE/kernel/$pkg.tmp"/deb/*.deb "$CACHE/kernel/$pkg.tmp" || return 1
	rm -rf "$CACHE/kernel/$pkg.tmp/deb"
	mv "$CACHE/kernel/$pkg.tmp" "$CACHE/kernel/$pkg"
	find "$CACHE/kernel/$pkg/boot" -name 'vmlinuz-*' -print -quit
}

# deb_boot DIR: one run of the machine; its console, check lines and monitor output in
# DIR. Returns QEMU's status, 124 past DEB_LIMIT, 125 for a machine that stopped.
deb_boot() {
	local dir=$1 qpid mpid size last=-1 heard=$SECONDS began=$SECONDS rc=0 st=0
	mkdir -p "$dir"
	mkfifo "$dir/monitor.in" "$dir/monitor.out"
	qemu-system-x86_64 -accel tcg -m 3072 -smp 1 \
		-display none -no-reboot \
		-chardev "pipe,id=monitor,path=$dir/monitor" -mon chardev=monitor,mode=readline \
		-kernel "$deb_vmlinuz" -initrd "$deb_work/initrd" \
		-append "console=ttyS0 rdinit=/sbin/init cgroup_no_v1=all panic=-1 quiet nokaslr printk.devkmsg=on systemd.show_status=0" \
		-serial "file:$dir/console.log" -serial "file:$dir/checks.log" \
		-serial "file:$dir/unit.json" -serial "file:$dir/e2e.json" &
	qpid=$!
	cat <>"$dir/monitor.out" >"$dir/monitor.log" &
	mpid=$!
	while kill -0 "$qpid" 2>/dev/null; do
		sleep 2
		size=$(cat "$dir/console.log" "$dir/checks.log" "$dir/unit.json" "$dir/e2e.json" 2>/dev/null | wc -c)
		if ((size != last)); then
			last=$size heard=$SECONDS
		fi
		if ((SECONDS - heard >= DEB_STALL)); then
			warn "deb: the machine has shown no sign of life for ${DEB_STALL}s; its virtual CPUs:"
			echo "info registers -a" 1<>"$dir/monitor.in"
			sleep 3
			grep -ao 'RIP=[0-9a-f]* .*HLT=[01]' "$dir/monitor.log" >&2 || true
			rc=125
		elif ((SECONDS - began >= DEB_LIMIT)); then
			warn "deb: the machine is still running after ${DEB_LIMIT}s: stopped"
			rc=124
		else
			continue
		fi
		kill "$qpid"
		break
	done
	wait "$qpid" || st=$?
	sleep 1
	kill "$mpid" 2>/dev/null || true
	wait "$mpid" 2>/dev/null || true
	rm -f "$dir/monitor.in" "$dir/monitor.out"
	((rc != 0)) || rc=$st
	return "$rc"
}

leg_deb() {
	local started=$SECONDS rootfs run rc attempt line
	LEG=deb
	# The machine's time: the cgroup v2 parts' budgets (240 s and 660 s), the package
	# checks' (each step 400 s at most, all of them normally 100 s) and the boot. A
	# normal run takes about four minutes.
	DEB_LIMIT=${DEB_LIMIT:-1500}
	DEB_STALL=${DEB_STALL:-120}
	printf '\n==== packages: deb\n'
	if [[ $(uname -m) != x86_64 ]]; then
		record "SKIP packages deb: cannot run here: it boots an amd64 kernel, and this machine is $(uname -m)"
		return
	fi
	if ! mkdir -p "$CACHE" 2>/dev/null || [[ ! -w $CACHE ]]; then
		record "FAIL packages deb: cannot run: the cache directory $CACHE cannot be written (YUZU_TEST_CACHE names another)"
		failed=1
		return
	fi
	if ! deb_vmlinuz=$(deb_kernel) || [[ -z $deb_vmlinuz ]]; then
		record "FAIL packages deb: no kernel to boot (above); nothing was installed"
		failed=1
		return
	fi
	if ! rootfs=$(deb_rootfs); then
		record "FAIL packages deb: the Debian 12 system could not be made (above); nothing was installed"
		failed=1
		return
	fi
	say "deb: kernel $deb_vmlinuz, system $rootfs ($(du -m "$rootfs" | cut -f1) MiB), ready after $((SECONDS - started))s"

	deb_work=$work/debvm
	local t=$deb_work/add
	mkdir -p "$t/yuzu-test" "$t/etc/systemd/system/multi-user.target.wants" "$t/work/bin"
	# The cgroup v2 tests, static like everything here (lib.sh sets CGO_ENABLED=0, which
	# the binaries the end-to-end test builds inherit).
	if [[ ! -x $TOOLS_BIN/testreport ]]; then
		bounded "build testreport" 300 tools/install.sh >/dev/null || true
	fi
	if ! { bounded "build the limits test" 600 go test -c -o "$t/work/limits.test" ./agent/internal/limits &&
		bounded "build the end-to-end test" 600 go test -c -o "$t/work/integration.test" ./integration &&
		(cd integration && bounded "build the binaries it drives" 600 env YUZU_INTEGRATION_BIN="$t/work/bin" YUZU_INTEGRATION_BUILD_ONLY=1 "$t/work/integration.test") &&
		bounded "build test2json" 300 go build -o "$t/work/test2json" cmd/test2json; }; then
		record "FAIL cgroup2 build: the test binaries did not build (above); the machine runs the package checks only"
		failed=1
		rm -rf "$t/work"
	fi
	cp "$work/$v1/yuzu-agent_${v1}_amd64.deb" "$work/$v2/yuzu-agent_${v2}_amd64.deb" \
		"$work/$v3/yuzu-agent_${v3}_amd64.deb" "$work/yuzu-testserver" \
		"$ROOT/scripts/packages-vm.sh" "$ROOT/scripts/packages-lib.sh" "$t/yuzu-test/"
	cp "$ROOT/packaging/linux/agent.yaml" "$t/yuzu-test/agent.yaml.default"
	cp "$work/update/release.pub" "$work/update/agent-$v4.bundle" "$work/update/agent-$v5.bundle" "$t/yuzu-test/"
	echo "$v1 $v2 $v3 $v4 $v5" >"$t/yuzu-test/versions"
	cat >"$t/etc/systemd/system/yuzu-test.service" <<-'EOF'
		[Unit]
		Description=yuzu package leg: scripts/packages-vm.sh
		After=basic.target
		[Service]
		Type=oneshot
		ExecStart=/bin/bash /yuzu-test/packages-vm.sh
		TimeoutStartSec=infinity
		[Install]
		WantedBy=multi-user.target
	EOF
	ln -s ../yuzu-test.service "$t/etc/systemd/system/multi-user.target.wants/yuzu-test.service"
	(cd "$t" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$deb_work/add.cpio"
	cat "$rootfs" "$deb_work/add.cpio" >"$deb_work/initrd"

	local booted=$SECONDS last_run=$CACHE/last-run-deb
	rm -rf "$last_run"
	mkdir -p "$last_run"
	for attempt in 1 2; do
		run=$deb_work/boot-$attempt
		rc=0
		deb_boot "$run" || rc=$?
		cp -r "$run" "$last_run/"
		if ((rc != 125 || attempt == 2)); then
			break
		fi
		record "WARN packages deb: the machine stopped dead after $((SECONDS - booted))s (no sign of life for ${DEB_STALL}s; its CPUs are in $last_run/boot-1): booted once more"
	done
	say "deb: the virtual machine ran for $((SECONDS - booted))s (exit $rc)"
	grep -a "deb-vm:" "$run/console.log" | grep -av "deb-vm: alive" | tr -d '\r' || true
	tr -d '\r' <"$run/checks.log"
	line=$(tr -d '\r' <"$run/checks.log" | grep -a '^deb-vm: done ' | tail -n 1)
	if [[ -z $line ]]; then
		tail -n 40 "$run/console.log" | tr -d '\r' >&2
		fail "the machine ran the checks to their end" "QEMU exit $rc; its console is in $last_run"
	else
		read -r _ _ p f <<<"$line"
		checks_passed=$p checks_failed=$f
	fi
	if [[ -d $t/work ]]; then
		deb_report unit "$run/unit.json" /dev/ttyS2
		deb_report "end to end" "$run/e2e.json" /dev/ttyS3
	fi
	leg_end deb "$started"
}

# deb_report NAME JSON PORT: one cgroup v2 part's stream through testreport, and how it
# ended (`cgroup2: exit N PORT` on the checks' port), into the summary with the usual
# counts.
deb_report() {
	local name=$1 json=$2 port=$3 one=$work/cgroup2-$1.summary st
	set +e
	"$TOOLS_BIN/testreport" -label "cgroup2 $name" -summary "$one" <"$json"
	st=$?
	set -e
	if [[ ! -s $one ]]; then
		record "FAIL cgroup2 $name: no test output came back from the machine"
		failed=1
		return
	fi
	if [[ -n $outer ]]; then echo "$(cat "$one") (in the deb leg's machine)" >>"$outer"; fi
	if ((st != 0)); then
		failed=1
	# grep reads it all (no -q): with pipefail, a grep that stops at its match can make
	# tr die of SIGPIPE, and the line that is there be taken for missing (it was, once).
	elif ! tr -d '\r' <"$run/checks.log" | grep -a "^cgroup2: exit 0 $port\$" >/dev/null; then
		record "FAIL cgroup2 $name: the test binary did not exit 0 although no test failed ($(tr -d '\r' <"$run/checks.log" | grep -a "cgroup2: exit .* $port" || echo "no exit line"))"
		failed=1
	fi
}
