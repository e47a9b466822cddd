// Package integration holds yuzu's end-to-end tests and benchmarks. They build the
// real binaries once per run (the agent, the tags plugin, the hello example and the
// test plugins under testplugins/) and drive them as a user would: through
// `yuzu-agent exec` processes, and in process through the supervisor and dispatcher
// packages the agent's `run` mode uses. Nothing here is shipped.
//
// Run from the repository root:
//
//	go test ./integration/...
//	go test -run '^$' -bench . ./integration/...
//
// The tests need Linux (they read /proc and send signals).
package integration
