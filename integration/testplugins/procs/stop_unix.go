//go:build !windows

package main

import "syscall"

// stopSelf stops the whole process (every thread), as a hung plugin would be.
func stopSelf() { _ = syscall.Kill(syscall.Getpid(), syscall.SIGSTOP) }
