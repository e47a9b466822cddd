#!/usr/bin/env bash
# `make test`: everything CI checks, from a fresh machine.
#
#   deps    install missing system commands (gcc, unshare, pgrep...) through apt-get
#   tools   pinned buf, protoc plugins, staticcheck into .tools/bin
#   lint    gofmt, go vet, staticcheck, buf lint, buf breaking
#   cross   linux/darwin/windows x amd64/arm64: build and vet with cgo off
#   build   bin/yuzu-agent, bin/plugins/*, bin/plugins/plugins.sha256
#   proto   go test in proto/: the generated code matches the .proto files
#   go test -race for sdk and agent; go test for plugin-tags, definitions, integration
#
# Every step runs even after an earlier one failed, so one run shows every problem.
# The summary at the end has one line per step (with test counts); the exit status is 1
# if any step failed.
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

# gotest MODULE FLAGS... runs a module's tests; testreport writes the counted summary
# line, this adds the duration.
gotest() {
	local mod=$1 start=$SECONDS rc=0
	shift
	printf '\n==== go test %s\n' "$mod"
	scripts/gotest.sh "$mod" "$summary" "$@" || rc=$?
	echo "     ($mod took $((SECONDS - start))s)" >>"$summary"
	((rc == 0)) || failed+=("go test $mod")
}

step deps scripts/deps.sh
step tools tools/install.sh
step lint scripts/lint.sh
step cross scripts/cross.sh
step build scripts/build.sh

# Race detection needs cgo. sdk and agent are where goroutines meet (streams,
# supervisor state machines), so they run under -race.
CGO_ENABLED=1 gotest sdk -race
CGO_ENABLED=1 gotest agent -race
# proto holds the generated-code staleness test (proto/generate_test.go).
gotest proto
gotest plugin-tags
gotest definitions
# The end-to-end tests exec real binaries, which go test's result cache cannot see
# change: always run them.
gotest integration -count=1 -timeout 10m

elapsed=$((SECONDS - started))
printf '\n==== summary (%dm%02ds)\n' $((elapsed / 60)) $((elapsed % 60))
cat "$summary"
if ((${#failed[@]} > 0)); then
	printf '\nmake test: FAILED: %s\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
	exit 1
fi
printf '\nmake test: PASSED\n'
