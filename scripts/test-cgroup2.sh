#!/usr/bin/env bash
# `make test-cgroup2`: the plugin boxes on a pure cgroup v2 kernel. Their tests
# (agent/internal/limits and integration's TestBox*, with YUZU_BOXES_REQUIRED=1) run in
# the deb leg's virtual machine, Debian 12 with systemd booted in QEMU with
# cgroup_no_v1=all, before its package checks: scripts/packages-deb.sh says how, and
# docs/agent.md "Resource limits" what they show. (They had a busybox machine of their
# own before; one machine now boots once for both.) This runs that leg alone.
#
# Usage: scripts/test-cgroup2.sh [SUMMARY_FILE]
exec env PACKAGE_LEGS=deb "$(dirname "${BASH_SOURCE[0]}")/test-packages.sh" "$@"
