#!/usr/bin/env bash
# Makes sure the system commands the tests use exist, installing the Debian package
# that provides a missing one. Nothing is installed when everything is present; when
# something is missing, `apt-get update` runs once, then `apt-get install` of just the
# missing packages. On a machine without apt-get, or without root, it says what is
# missing and fails: tests that need it could not run, and that is never skipped
# silently.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Usage: scripts/deps.sh [windows|package|packages]
# Without an argument: what `make test`'s Linux steps use. `windows`: what the Windows
# leg (scripts/test-windows.sh) uses instead, Wine above all. `package`: what `make
# package` uses besides Go and nfpm (wixl). `packages`: what the package legs
# (scripts/test-packages.sh) use: that, rpm and a static busybox, mmdebstrap and QEMU
# (the deb leg's machine, which also runs the cgroup v2 tests).

# command  Debian package  why
if [[ ${1:-} == package ]]; then
	needs=(
		"wixl               wixl            make package builds the MSI with msitools' wixl"
		"msibuild           msitools        make package sets the MSI's package code (wixl makes a random one)"
		"faketime           faketime        make package runs wixl at the commit's time: it stamps the MSI with the time"
	)
elif [[ ${1:-} == packages ]]; then
	needs=(
		"wixl               wixl            make package builds the MSI with msitools' wixl"
		"msibuild           msitools        make package sets the MSI's package code (wixl makes a random one)"
		"faketime           faketime        make package runs wixl at the commit's time: it stamps the MSI with the time"
		"rpm                rpm             the rpm leg installs, upgrades and erases the .rpm in a throwaway root"
		"mmdebstrap         mmdebstrap      the deb leg makes a Debian 12 root file system with systemd"
		"qemu-system-x86_64 qemu-system-x86 the deb leg boots that system in a virtual machine"
		"cpio               cpio            the deb leg packs the machine's file system"
		"apt-get            apt             the deb leg downloads the Debian kernel package it boots"
		"dpkg-deb           dpkg            the deb leg unpacks that package"
	)
elif [[ ${1:-} == windows ]]; then
	needs=(
		"/usr/lib/wine/wine64 wine64       the Windows leg runs GOOS=windows binaries under Wine's 64-bit loader"
		"wineserver           wine         the Windows leg sets up its Wine prefix and keeps one wine server for its run"
		"osslsigncode         osslsigncode the Windows leg signs a fixture exe to check get_signature"
		"openssl              openssl      the Windows leg makes the fixture's throwaway code-signing certificate"
	)
else
	needs=(
		"gcc        gcc        go test -race needs cgo, and cgo needs a C compiler"
		"git        git        the breaking-change check reads the previous commit"
		"unshare    util-linux tests make paths unusable inside a private mount namespace"
		"pgrep      procps     tests check that no plugin process outlives the agent"
		"sha256sum  coreutils  scripts checksum what they build and download"
		"tar        tar        the breaking-change check unpacks the previous commit's proto/"
		"ip                   iproute2    firewall tests give every real backend its own network namespace (ip netns)"
		"nft                  nftables    firewall tests load nftables rulesets into those namespaces"
		"xtables-legacy-multi iptables    firewall tests reach the iptables and ufw rungs through iptables-legacy inside a namespace"
		"ufw                  ufw         firewall tests run a real ufw, enabled and disabled, inside a namespace"
		"firewalld            firewalld   firewall tests run a real firewalld inside a namespace, on a private bus"
		"dbus-daemon          dbus-daemon firewall tests start a private D-Bus bus (never the system one)"
		"setpriv              util-linux  firewall tests run the plugin as nobody"
		"systemd-analyze      systemd     the service test checks the written systemd unit with systemd-analyze verify"
		"jq                   jq          the output tests and make demo check --output json and jsonl with a real jq"
	)
fi

# Several of the commands live in /usr/sbin, which a non-login root shell may not have
# on its PATH; look there too rather than installing what is already present.
export PATH="$PATH:/usr/sbin:/sbin"

missing_pkgs=()
for line in "${needs[@]}"; do
	read -r cmd pkg why <<<"$line"
	if command -v "$cmd" >/dev/null 2>&1; then
		continue
	fi
	say "deps: $cmd is missing ($why): will install Debian package $pkg"
	missing_pkgs+=("$pkg")
done
# cgo also needs the C library headers, which gcc only recommends.
if [[ ${1:-} == packages ]]; then
	# The rpm leg's throwaway root has no C library: its busybox must be the static one
	# (Debian's busybox package is linked against libc).
	if ! [[ -x /bin/busybox ]] || ldd /bin/busybox >/dev/null 2>&1; then
		say "deps: /bin/busybox is missing or not static (a machine or root without libc needs it): will install busybox-static"
		missing_pkgs+=(busybox-static)
	fi
elif [[ ${1:-} == windows || ${1:-} == package ]]; then
	: # no cgo in the Windows leg, nor in make package
elif command -v gcc >/dev/null 2>&1 && [[ ! -e /usr/include/stdlib.h ]]; then
	say "deps: C headers are missing (cgo for go test -race needs them): will install libc6-dev"
	missing_pkgs+=(libc6-dev)
elif [[ " ${missing_pkgs[*]:-} " == *" gcc "* ]]; then
	missing_pkgs+=(libc6-dev)
fi

if ((${#missing_pkgs[@]} == 0)); then
	say "deps: all needed system commands are present"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	warn "deps: cannot install ${missing_pkgs[*]}: this machine has no apt-get; install them by hand"
	exit 1
fi
sudo=()
if [[ $(id -u) != 0 ]]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		warn "deps: cannot install ${missing_pkgs[*]}: not root and no password-less sudo; install them by hand"
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
# Installing firewalld or ufw must never firewall this machine: on a host booted with
# systemd, firewalld's postinst would start the daemon, which loads its zones into the
# host's own namespace. A policy-rc.d that answers 101 ("action forbidden") stops every
# package from starting a service; it is put in place only for this install, unless one
# is already there, and removed afterwards. The tests start their own firewalld inside
# a private network namespace, on a private bus.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\n# Written by yuzu scripts/deps.sh for one apt-get install: start no services.\nexit 101\n' |
		"${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 0755 "$policy"
	own_policy=1
	trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi
# No stdin: CI runs without one, and apt must never wait for an answer.
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" </dev/null
if ((own_policy)); then
	"${sudo[@]}" rm -f "$policy"
	trap - EXIT
fi
# The policy keeps a service from starting now, not from being enabled for the next
# boot: firewalld's postinst enables its unit, and a host rebooted after `make test`
# would come up firewalled by it. A firewall service installed by this run is disabled
# again (deb-systemd-helper remembers that, so an upgrade keeps it disabled); one that
# was there before is the machine's, and left as it was. ufw's unit stays: it applies
# rules only when /etc/ufw/ufw.conf says ENABLED=yes, which a fresh install does not.
for pkg in "${missing_pkgs[@]}"; do
	if [[ $pkg == firewalld ]] && command -v deb-systemd-helper >/dev/null 2>&1; then
		"${sudo[@]}" deb-systemd-helper disable firewalld.service </dev/null &&
			say "deps: firewalld installed for the tests and disabled, so the host does not boot with it"
	fi
done

for line in "${needs[@]}"; do
	read -r cmd pkg _ <<<"$line"
	if ! command -v "$cmd" >/dev/null 2>&1; then
		warn "deps: $cmd is still missing after installing $pkg"
		exit 1
	fi
done
say "deps: installed ${missing_pkgs[*]}"
