# yuzu: build, test and check everything. The logic lives in scripts/ (and tools/ for the
# pinned developer tools); each target is one script so it can also be run by hand.
#
#   make test    everything CI checks (installs what it needs; see scripts/test.sh)
#   make demo    build, then drive the plugins through bin/yuzu-agent, its shell and yuzu-testserver
#   make help    the list of targets

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

# A fresh Debian machine has Go at /usr/local/go/bin without it being on PATH.
ifeq ($(shell command -v go 2>/dev/null),)
export PATH := /usr/local/go/bin:$(PATH)
endif

TOOLS_BIN := $(CURDIR)/.tools/bin

# How long `make fuzz` runs each fuzz target, and how many runs `make bench` times.
FUZZTIME ?= 10s
RUNS ?= 30
export FUZZTIME RUNS

.PHONY: all build package test test-windows test-cgroup2 test-packages test-stress demo bench fuzz proto lint cross tools deps clean help

all: build

## build: bin/yuzu-agent, bin/plugins/yuzu-plugin-NAME and their catalog.json, bin/yuzu-testserver, bin/yuzu-bundle
build:
	scripts/build.sh

## package: dist/ with the .deb and .rpm (amd64, arm64), the .msi, the macOS tarballs and SHA256SUMS (docs/packages.md)
package:
	scripts/package.sh

## test: deps, tools, lint, cross, build, reproducible builds, go test (-race for sdk and agent), the Windows leg, the package legs, integration
test:
	scripts/test.sh

## test-windows: the Windows code and binaries run under Wine (installs Wine; see scripts/test-windows.sh)
test-windows:
	scripts/test-windows.sh

## test-cgroup2: the plugin boxes on a pure cgroup v2 kernel: the deb leg's machine alone (installs QEMU; see scripts/packages-deb.sh)
test-cgroup2:
	scripts/test-cgroup2.sh

## test-packages: the .deb under systemd in QEMU, the .rpm in a throwaway root, the .msi under Wine (PACKAGE_LEGS="deb rpm msi")
test-packages:
	scripts/test-packages.sh

## test-stress: the fleet, supervisor and dispatch tests under 5 busy loops per core, 10 runs (STRESS_RUNS, STRESS_HOGS, STRESS_RUN)
test-stress:
	scripts/stress.sh

## demo: build, then run the plugins through the agent, its shell and a test fleet server, in temporary dirs
demo: build
	scripts/demo.sh

## bench: Go benchmarks, then the cold-start time of `yuzu-agent exec tags count`
bench: build
	scripts/bench.sh

## fuzz: every fuzz target for FUZZTIME (default 10s) each
fuzz:
	scripts/fuzz.sh

## proto: regenerate the committed *.pb.go (agent/fleetpb, sdk/internal/pluginv1) from proto/ with the pinned buf and protoc plugins
proto: tools
	cd proto && PATH="$(TOOLS_BIN):$$PATH" buf generate

## lint: gofmt, go vet, staticcheck, buf lint, buf breaking against HEAD~1
lint: tools
	scripts/lint.sh

## cross: build and vet for linux/darwin/windows x amd64/arm64 with cgo off
cross:
	scripts/cross.sh

## tools: install the pinned tools (tools/versions.txt) into .tools/bin
tools:
	tools/install.sh

## deps: install missing system commands the tests need (apt-get)
deps:
	scripts/deps.sh

## clean: remove build outputs (bin/, dist/); `rm -rf .tools` also drops the pinned tools
clean:
	rm -rf bin dist

help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)
