// Package proc runs a plugin binary as a child process: it verifies the binary into a
// sealed image, starts exactly those bytes with an allow-listed environment, relays the
// child's log lines, notices how it ended, and cleans up its socket directory and the
// orphans it left.
package proc
