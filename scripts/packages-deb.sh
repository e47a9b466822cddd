# shellcheck shell=bash
# The deb leg of scripts/test-packages.sh (sourced by it: leg_deb): the .deb under real
# systemd, in a virtual machine.
#
# The machine is Debian 12 with systemd, made with mmdebstrap from Debian's archive and
# booted by QEMU (software emulation, no KVM needed) with Debian's cloud kernel, the one
# the cgroup v2 leg boots: its file system is the initramfs, so the kernel needs no
# disk driver (the cloud kernel has virtio-blk only as a module), and systemd runs as
# PID 1 from it with the cgroup v2 hierarchy alone. Both are cached outside the clone,
# in $CACHE (default /var/cache/yuzu-test): the system in debian12-systemd-<the first 12
# hex digits of its recipe's SHA-256>/, so a changed recipe makes a new one and a fresh
# clone on the same machine (CI's) reuses it; the kernel in kernel/<package>/.
#
# Each run appends a small second archive to the initramfs (the kernel unpacks them in
# turn): the three packages, yuzu-testserver, scripts/packages-vm.sh and the unit that
# runs it. The script's check lines come back on the second serial port.
#
# Bounded like the cgroup v2 leg: one virtual CPU (with two, emulated machines now and
# then lose an inter-CPU interrupt), the machine's time limited, a console silent for
# STALL seconds (the script says "alive" every 10 s) taken for a stopped machine, whose
# CPUs' registers QEMU's monitor prints before it is booted once more (WARN in the
# summary).

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
	qemu-system-x86_64 -accel tcg -m 2048 -smp 1 \
		-display none -no-reboot \
		-chardev "pipe,id=monitor,path=$dir/monitor" -mon chardev=monitor,mode=readline \
		-kernel "$deb_vmlinuz" -initrd "$deb_work/initrd" \
		-append "console=ttyS0 rdinit=/sbin/init panic=-1 quiet nokaslr printk.devkmsg=on systemd.show_status=0" \
		-serial "file:$dir/console.log" -serial "file:$dir/checks.log" &
	qpid=$!
	cat <>"$dir/monitor.out" >"$dir/monitor.log" &
	mpid=$!
	while kill -0 "$qpid" 2>/dev/null; do
		sleep 2
		size=$(cat "$dir/console.log" "$dir/checks.log" 2>/dev/null | wc -c)
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
	# The machine's time: a normal run takes about DEB_TYPICAL; the steps inside have
	# limits of their own, well under this.
	DEB_LIMIT=${DEB_LIMIT:-1200}
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
	mkdir -p "$t/yuzu-test" "$t/etc/systemd/system/multi-user.target.wants"
	cp "$work/$v1/yuzu-agent_${v1}_amd64.deb" "$work/$v2/yuzu-agent_${v2}_amd64.deb" \
		"$work/$v3/yuzu-agent_${v3}_amd64.deb" "$work/yuzu-testserver" \
		"$ROOT/scripts/packages-vm.sh" "$ROOT/scripts/packages-lib.sh" "$t/yuzu-test/"
	cp "$ROOT/packaging/linux/agent.yaml" "$t/yuzu-test/agent.yaml.default"
	echo "$v1 $v2 $v3" >"$t/yuzu-test/versions"
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
	if grep -aq "has no 'plugins add --if-newer'" "$run/checks.log"; then
		record "WARN packages deb: the agent has no 'plugins add --if-newer' yet: the postinst added each plugin with 'plugins add'"
	fi
	leg_end deb "$started"
}
