#!/usr/bin/env bash
# The unit half of the Windows leg (scripts/test-windows.sh runs it; docs/windows.md):
# every package of PATTERNS that has tests, built as a Windows test binary and run under
# Wine. Two modes, so that the leg can build while Wine starts:
#
#   build PATTERNS...  one `go test -c` (GOOS=windows, GOARCH=amd64, cgo off, the flags
#          `make cross` compiles windows/amd64 with, so the compiled packages are
#          shared) into .cache/wine/tests, where the binaries stay: the next run links
#          only those whose code changed. (`go test -exec` would link every binary
#          again on every run, a third of this step's CPU time, and caches no result
#          under -exec.) The binaries get the Wine overlay, below. The build's event
#          stream is kept for the run, and the list of binaries written only when
#          every one built: a binary left by an earlier run is never taken for the code.
#          Needs no Wine.
#   run    the binaries of the last build, WINE_P at a time (default 2: four or six
#          took as long on two cores, with more CPU time), the slowest of the last run
#          first, each in its package's directory as go test runs it, with -test.short
#          (heavy loops scale down under Wine, each saying so) and -test.timeout 4m,
#          through test2json. A binary still running after WINE_TEST_LIMIT seconds
#          (default 300) is stopped and fails, named. It writes one `go test -json`
#          event stream on stdout (the build's first), for tools/testreport; a wine
#          server must be running (scripts/test-windows.sh).
#
# Usage: scripts/wine-unit.sh build PATTERNS... ; scripts/wine-unit.sh run
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=wine.sh
source "$ROOT/scripts/wine.sh"

parallel=${WINE_P:-2}
limit=${WINE_TEST_LIMIT:-300}
tests=$WINE_DIR/tests
# list: "IMPORT_PATH DIR BINARY" per package, written by a build that fully succeeded;
# build.json: that build's go test -json events.
list=$tests/list
build_events=$tests/build.json
t2j=$WINE_DIR/bin/test2json
mode=${1:-}
shift || true

# The file the overlay adds to each tested package (a name no package uses).
fallback_file=zz_wine_fallback_test.go

# wine_overlay reads "DIR NAME" lines (a tested package's directory and name) and prints
# the path of a `go test -overlay` file for their test binaries, writing it first.
# Wine 8.0 answers STATUS_NOT_IMPLEMENTED to the FileDispositionInformationEx delete that
# Go's os.RemoveAll (and so every t.TempDir cleanup) tries first, and Go falls back to
# the classic delete only for the statuses older Windows gives. The standard library has
# a switch for its own tests that always takes the classic delete,
# internal/syscall/windows.TestDeleteatFallback: the overlay adds one generated external
# test file to each package that turns it on from an init function (a //go:linkname
# reference, hence -checklinkname=0 at link time). Only those small files are compiled
# for this: the standard library, the dependencies and the packages under test keep the
# build cache they share with `make cross`, and no shipped binary ever sees them.
wine_overlay() {
	local dir=$WINE_DIR/overlay pkgdir name json=''
	rm -rf "$dir"
	mkdir -p "$dir"
	while read -r pkgdir name; do
		if [[ $pkgdir == *[\"\\]* ]]; then
			warn "windows: cannot name $pkgdir in an overlay file"
			return 1
		fi
		if [[ -e $pkgdir/$fallback_file ]]; then
			warn "windows: $pkgdir/$fallback_file exists; the Wine overlay adds a file of that name"
			return 1
		fi
		[[ -f $dir/$name.go ]] || cat >"$dir/$name.go" <<-EOF
			// Added to this package's test binary by scripts/wine-unit.sh for the Windows
			// leg under Wine 8.0; never part of the repository. See wine_overlay there.
			package ${name}_test

			import _ "unsafe" // for go:linkname

			//go:linkname wineDeleteatFallback internal/syscall/windows.TestDeleteatFallback
			var wineDeleteatFallback bool

			func init() { wineDeleteatFallback = true }
		EOF
		json+=${json:+,}"\"$pkgdir/$fallback_file\":\"$dir/$name.go\""
	done
	printf '{"Replace":{%s}}\n' "$json" >"$dir/overlay.json"
	echo "$dir/overlay.json"
}

# build PATTERNS... builds the test binaries and writes the list (see the top).
build() {
	export GOOS=windows GOARCH=amd64 CGO_ENABLED=0
	rm -f "$list"
	mkdir -p "$tests"
	: >"$build_events"
	ips=() dirs=() names=()
	while read -r ip dir name; do
		ips+=("$ip") dirs+=("$dir") names+=("$name")
	done < <(go list -e -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}} {{.Name}}{{end}}' "$@" | grep .)
	if ((${#ips[@]} == 0)); then
		warn "windows: no package with tests in $*"
		return 1
	fi
	overlay=$(for i in "${!ips[@]}"; do echo "${dirs[i]} ${names[i]}"; done | wine_overlay) || return 1

	# test2json, for the host: it turns each binary's -test.v=test2json output into events.
	mkdir -p "$WINE_DIR/bin"
	bounded "build test2json" 300 env GOOS= GOARCH= go build -o "$t2j" cmd/test2json >&2 || return 1

	# go test -c names a binary after the last element of its import path; packages that
	# share one go to separate directories (one go test -c each).
	declare -A taken=()
	bins=() groups=()
	for i in "${!ips[@]}"; do
		base=${ips[i]##*/} g=0
		while [[ -n ${taken[$g/$base]:-} ]]; do g=$((g + 1)); done
		taken[$g/$base]=1
		bins[i]=$tests/$g/$base.test.exe
		[[ " ${groups[*]} " == *" $g "* ]] || groups+=("$g")
	done

	built=1 build_start=$SECONDS
	for g in "${groups[@]}"; do
		pkgs=()
		for i in "${!ips[@]}"; do
			[[ ${bins[i]} == "$tests/$g/"* ]] && pkgs+=("${ips[i]}")
		done
		mkdir -p "$tests/$g"
		bounded "build the Windows test binaries" 600 go test -c -json -vet=off -overlay "$overlay" \
			-ldflags='-checklinkname=0 -s -w' -o "$tests/$g/" "${pkgs[@]}" >>"$build_events" || built=0
	done
	if ((!built)); then
		warn "windows: not every Windows test binary built, so none is run"
		return 1
	fi
	for i in "${!ips[@]}"; do echo "${ips[i]} ${dirs[i]} ${bins[i]}"; done >"$list.tmp"
	mv "$list.tmp" "$list"
	say "windows: ${#ips[@]} test binaries built or up to date in $((SECONDS - build_start))s"
}

# run_one I runs package I's binary and writes its events to $work/I.json. When the
# binary ends without a package result (a crash, os.Exit, a stop), one is added.
run_one() {
	local i=$1 start=$SECONDS rc=0 ip=${ips[$1]} out=$work/$1.json
	(cd "${dirs[i]}" && "$t2j" -t -p "$ip" bash -c '
		pkg=$1 limit=$2
		shift 2
		timeout --kill-after=10 "$limit" "$@"; rc=$?
		if ((rc == 124 || rc == 137)); then
			echo "windows: the test binary of $pkg did not finish within $limit s: stopped"
		fi
		exit "$rc"' - "$ip" "$limit" "$ROOT/scripts/wine-exec" "${bins[i]}" \
		-test.v=test2json -test.short -test.paniconexit0 -test.timeout=4m </dev/null) >"$out" 2>&1 || rc=$?
	echo "$((SECONDS - start)) $ip" >"$work/$i.elapsed"
	if ((rc != 0)) && ! grep -qF "\"Action\":\"fail\",\"Package\":\"$ip\",\"Elapsed\"" "$out"; then
		{ grep -vF "\"Action\":\"pass\",\"Package\":\"$ip\",\"Elapsed\"" "$out" || true; } >"$out.tmp"
		printf '{"Action":"output","Package":"%s","Output":"windows: the test binary failed without a result of its own (a crash, an exit or a stop; see above)\\n"}\n' "$ip" >>"$out.tmp"
		printf '{"Action":"fail","Package":"%s","Elapsed":%d}\n' "$ip" $((SECONDS - start)) >>"$out.tmp"
		mv "$out.tmp" "$out"
	fi
}

# run runs the binaries of the last complete build (see the top).
run() {
	# The build's events first: a failed build shows here, and nothing runs.
	cat "$build_events" 2>/dev/null || true
	if [[ ! -f $list ]]; then
		warn "windows: no complete build of the Windows test binaries (above): none is run"
		return 1
	fi
	ips=() dirs=() bins=()
	while read -r ip dir bin; do
		ips+=("$ip") dirs+=("$dir") bins+=("$bin")
	done <"$list"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	run_start=$SECONDS
	# The slowest packages of the last run start first; new ones count as slow.
	declare -A last=()
	if [[ -f $tests/elapsed ]]; then
		while read -r s ip; do last[$ip]=$s; done <"$tests/elapsed"
	fi
	mapfile -t order < <(for i in "${!ips[@]}"; do echo "${last[${ips[i]}]:-999999} $i"; done | sort -rn | cut -d' ' -f2)
	for i in "${order[@]}"; do
		while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
		run_one "$i" &
	done
	wait
	warn "windows: ${#ips[@]} test binaries ran in $((SECONDS - run_start))s, $parallel at a time"
	cat "$work"/*.elapsed >"$work/elapsed"
	for ip in "${!last[@]}"; do
		[[ " ${ips[*]} " == *" $ip "* ]] || echo "${last[$ip]} $ip"
	done >>"$work/elapsed"
	mv "$work/elapsed" "$tests/elapsed"
	for i in "${!ips[@]}"; do
		cat "$work/$i.json"
	done
}

case $mode in
build) build "$@" ;;
run) run ;;
*)
	warn "usage: scripts/wine-unit.sh build PATTERNS... | run"
	exit 2
	;;
esac
