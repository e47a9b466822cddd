//go:build unix

package manifest

import "syscall"

func setUmask(m int) int { return syscall.Umask(m) }
