#!/usr/bin/env bash
# `make test`: everything CI checks, from a fresh machine.
#
#   deps    install missing system commands (gcc, unshare, pgrep...) through apt-get
#   tools   pinned buf, protoc plugins, staticcheck into .tools/bin
#   lint    gofmt, go vet, staticcheck, buf lint, buf breaking
#   cross   linux/darwin/windows x amd64/arm64: build and vet with cgo off
#   build   bin/yuzu-agent, bin/plugins/*, bin/plugins/catalog.json
#   proto   go test in proto/: the generated code matches the .proto files
#   go test every module: -race for sdk and agent; integration last, never cached
#   test-windows  the Windows leg under Wine (scripts/test-windows.sh), before integration
#   test-packages the .rpm in a throwaway root, the .msi under Wine, the .deb under
#                 systemd in QEMU: installed, upgraded, removed (scripts/test-packages.sh);
#                 the same machine runs the plugin boxes' tests on a pure cgroup v2
#                 kernel first (what test-cgroup2 ran in a machine of its own)
#
# Every step runs even after an earlier one failed, so one run shows every problem.
# The summary at the end has one line per step (with test counts); the exit status is 1
# if any step failed.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
failed=()
started=$SECONDS

# step NAME CMD... runs one step and records its outcome and duration.
step() {
	local name=$1 start=$SECONDS rc=0
	shift
	printf '\n==== %s\n' "$name"
	"$@" || rc=$?
	if ((rc == 0)); then
		echo "PASS $name ($((SECONDS - start))s)" >>"$summary"
	else
		echo "FAIL $name: exit $rc ($((SECONDS - start))s)" >>"$summary"
		failed+=("$name")
	fi
}

# gotest MODULE FLAGS... runs a module's tests; scripts/gotest.sh writes the summary
# line with the test counts.
gotest() {
	local mod=$1 rc=0
	shift
	printf '\n==== go test %s\n' "$mod"
	scripts/gotest.sh "$mod" "$summary" "$@" || rc=$?
	((rc == 0)) || failed+=("go test $mod")
}

step deps scripts/deps.sh
step tools tools/install.sh
step lint scripts/lint.sh
step cross scripts/cross.sh
step build scripts/build.sh
step reproducible scripts/test-reproducible.sh

# Every workspace module is tested, so a new module (another plugin) needs no change
# here. Race detection needs cgo; sdk and agent are where goroutines meet (streams,
# supervisor state machines), so they run under -race. proto holds the generated-code
# staleness test (proto/generate_test.go). The end-to-end tests exec real binaries,
# which go test's result cache cannot see change, so they always run, and run last.
for mod in $(modules | grep -vx integration); do
	case $mod in
	sdk | agent) CGO_ENABLED=1 gotest "$mod" -race ;;
	proto) NOTE="generated code up to date" gotest proto ;;
	*) gotest "$mod" ;;
	esac
done
# tools/ (the test report and tool installer) is outside go.work on purpose.
GOWORK=off gotest tools
# The Windows leg: every module's Windows code run under Wine, and the Windows
# binaries end to end (integration/wine, which runs here and not with integration).
printf '\n==== test-windows\n'
rc=0
scripts/test-windows.sh "$summary" || rc=$?
((rc == 0)) || failed+=(test-windows)
# The packages, installed, upgraded and removed for real (docs/packages.md); the deb
# leg's machine also runs the boxes' v2 code, which the hybrid build machines never run.
printf '\n==== test-packages\n'
rc=0
scripts/test-packages.sh "$summary" || rc=$?
((rc == 0)) || failed+=(test-packages)
# grep reads the whole list (no -q): with pipefail, a grep -q that stops at its match
# can make the writer die of SIGPIPE and the test fail (it did, on a loaded machine).
if modules | grep -x integration >/dev/null; then
	# The bound stops a hang, not a slow run: on a quiet two-core machine the package
	# takes a few minutes, on a loaded one over ten.
	PKGS=$(cd integration && go list ./... | grep -v '/integration/wine$' | sed 's|^github.com/yuzugo/yuzu/integration|.|' | tr '\n' ' ') \
		gotest integration -count=1 -timeout 20m
else
	echo "FAIL integration: the module is missing from go.work" >>"$summary"
	failed+=(integration)
fi

# A clean clone must stay clean: a go.mod, go.sum or go.work.sum that the build or the
# tests rewrote means the committed one is stale (go.work.sum lacked lines once), and
# the next clone would differ from what was tested.
printf '\n==== clean tree\n'
if ! git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	echo "clean tree: not a git checkout: the check cannot run"
else
	dirty=$(git -C "$ROOT" status --porcelain -- go.work go.work.sum '*go.mod' '*go.sum')
	if [[ -n $dirty ]]; then
		printf 'the build or the tests changed module files:\n%s\n' "$dirty"
		git -C "$ROOT" diff -- go.work.sum '*go.mod' '*go.sum' | head -40
		echo "FAIL clean tree: module files changed by the run (commit them)" >>"$summary"
		failed+=("clean tree")
	else
		echo "PASS clean tree: go.work, go.work.sum and every go.mod and go.sum as committed" | tee -a "$summary"
	fi
fi

elapsed=$((SECONDS - started))
# CPU time of everything the steps ran (user + system), from the shell's `times`: with
# two cores, wall time can never drop below half of it.
times >"$summary.cpu"
cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] } printf "%d", s }' "$summary.cpu")
rm -f "$summary.cpu"
printf '\n==== summary (wall %dm%02ds, cpu %dm%02ds)\n' $((elapsed / 60)) $((elapsed % 60)) $((cpu / 60)) $((cpu % 60))
cat "$summary"
# The totals over every module, last and alone on their line, in the plain form CI
# readers look for: `tests: N passed, N failed, N skipped`.
totals=$(awk '{ for (i = 2; i <= NF; i++) { if ($i ~ /^passed,?$/) p += $(i-1); if ($i ~ /^failed,?$/) f += $(i-1); if ($i ~ /^skipped,?$/) k += $(i-1) } }
	END { printf "tests: %d passed, %d failed, %d skipped", p, f, k }' "$summary")
if ((${#failed[@]} > 0)); then
	printf '\nmake test: FAILED:'
	printf ' [%s]' "${failed[@]}"
	printf '\n%s\n' "$totals"
	exit 1
fi
printf '\nmake test: PASSED\n%s\n' "$totals"
