// Package stacks writes a dump of every goroutine's stack, for the log of an agent
// that seems stuck: on the dump signal (Watch; docs/agent.md), and when a command goes
// unanswered past its deadline (docs/fleet.md).
package stacks

import (
	"bytes"
	"runtime/pprof"
	"strings"
)

// Dump is every goroutine's stack in the runtime's panic format, its tabs made spaces
// (a log line would print them as \t).
func Dump() string {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return strings.ReplaceAll(b.String(), "\t", "    ")
}
