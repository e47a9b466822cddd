#!/usr/bin/env bash
# `make lint`: gofmt, go vet and staticcheck on every module (and tools/), buf lint, and
# buf's breaking-change check of proto/ against the previous commit. Every check runs
# even after one fails, so one run shows everything to fix; the exit status is 1 if any
# check failed.
#
# staticcheck runs once for each of LINT_PLATFORMS (default: the host's platform, then
# windows/amd64 and darwin/amd64). It only sees the files built for the platform it
# checks, so without the others a _windows.go or _darwin.go file would never be
# checked, and code only Linux uses but every OS compiles would not show up as unused.
# One architecture per OS is enough: no file here depends on the architecture.
#
# Usage: scripts/lint.sh [CHECK...]   CHECK: gofmt vet staticcheck buf-lint buf-breaking
# (default: all of them).
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The platforms staticcheck checks; see the top of this file.
LINT_PLATFORMS=${LINT_PLATFORMS:-"$(go env GOHOSTOS)/$(go env GOHOSTARCH) windows/amd64 darwin/amd64"}

failed=()
fail() {
	warn "lint: FAILED: $2"
	failed+=("$1")
}

check_gofmt() {
	# Every Go file we own, not the module cache or tool downloads.
	local unformatted
	unformatted=$(find . \( -path ./.git -o -path ./.tools -o -path ./.cache -o -path ./bin -o -name testdata \) -prune \
		-o -name '*.go' -print0 | xargs -0 -r gofmt -l)
	if [[ -n $unformatted ]]; then
		warn "$unformatted"
		fail gofmt "gofmt: these files need gofmt -w (listed above)"
	else
		say "lint: gofmt ok"
	fi
}

# lint_modules prints MODULE GOWORK for every module to vet and staticcheck. tools/ is
# outside go.work (its pinned tools must not mix their dependencies into ours), so it
# is checked with GOWORK=off.
lint_modules() {
	modules | sed 's/$/ /'
	echo "tools off"
}

# per_module NAME CMD... runs CMD in every module that has packages (for the GOOS and
# GOARCH in the environment).
per_module() {
	local name=$1 mod gowork
	shift
	while read -r mod gowork; do
		if [[ -z $(GOWORK=$gowork packages "$mod") ]]; then
			say "lint: $mod has no packages yet: no $name to run"
			continue
		fi
		if (cd "$mod" && GOWORK=$gowork "$@" ./...); then
			say "lint: $name $mod ok"
		else
			fail "$name:$mod" "$name in $mod"
		fi
	done < <(lint_modules)
}

check_vet() {
	per_module "go vet" go vet
}

check_staticcheck() {
	if [[ ! -x $TOOLS_BIN/staticcheck ]]; then
		fail staticcheck "$TOOLS_BIN/staticcheck is missing: run \`make tools\`"
		return
	fi
	local platform start GOOS GOARCH
	for platform in $LINT_PLATFORMS; do
		start=$SECONDS
		GOOS=${platform%/*} GOARCH=${platform#*/}
		export GOOS GOARCH
		per_module "staticcheck[$platform]" "$TOOLS_BIN/staticcheck"
		say "lint: staticcheck[$platform] took $((SECONDS - start))s"
	done
}

check_buf-lint() {
	if [[ ! -x $TOOLS_BIN/buf ]]; then
		fail buf-lint "$TOOLS_BIN/buf is missing: run \`make tools\`"
	elif (cd proto && "$TOOLS_BIN/buf" lint); then
		say "lint: buf lint ok"
	else
		fail buf-lint "buf lint in proto/"
	fi
}

check_buf-breaking() {
	if [[ ! -x $TOOLS_BIN/buf ]]; then
		fail buf-breaking "$TOOLS_BIN/buf is missing: run \`make tools\`"
		return
	fi
	# The baseline is the previous commit's proto/. It may not exist: the first commit,
	# a commit before proto/ existed, a shallow clone (CI checkouts are often depth 1),
	# or a source tree without git. None of those is an error, and each says so.
	local reason=
	if ! git rev-parse --git-dir >/dev/null 2>&1; then
		reason="not a git checkout"
	elif ! git rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null 2>&1; then
		if [[ $(git rev-parse --is-shallow-repository 2>/dev/null) == true ]]; then
			reason="shallow clone: HEAD~1 was not fetched; git fetch --deepen=1 enables the check"
		else
			reason="HEAD is the first commit"
		fi
	elif [[ -z $(git ls-tree -r --name-only HEAD~1 -- proto | grep '\.proto$' || true) ]]; then
		reason="HEAD~1 has no .proto files under proto/"
	fi
	if [[ -n $reason ]]; then
		say "lint: no baseline for the breaking check yet ($reason)"
		return
	fi
	# Export HEAD~1's proto/ with git itself rather than letting buf clone the
	# repository: this works the same in shallow, worktree and submodule checkouts.
	local base rev
	base=$(mktemp -d)
	rev=$(git rev-parse --short HEAD~1)
	if git archive HEAD~1 proto | tar -x -C "$base" &&
		"$TOOLS_BIN/buf" breaking proto --against "$base/proto"; then
		say "lint: buf breaking against HEAD~1 ($rev) ok"
	else
		fail buf-breaking "buf breaking: proto/ breaks compatibility with HEAD~1 ($rev)"
	fi
	rm -rf "$base"
}

checks=("$@")
if ((${#checks[@]} == 0)); then
	checks=(gofmt vet staticcheck buf-lint buf-breaking)
fi
for c in "${checks[@]}"; do
	if [[ $(type -t "check_$c") != function ]]; then
		warn "lint: unknown check '$c' (gofmt vet staticcheck buf-lint buf-breaking)"
		exit 2
	fi
	"check_$c"
done

if ((${#failed[@]} > 0)); then
	warn "lint: FAILED: ${failed[*]}"
	exit 1
fi
say "lint: ${checks[*]}: all ok"
