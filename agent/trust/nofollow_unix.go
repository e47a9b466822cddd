//go:build !windows

package trust

import "syscall"

// noFollow keeps an open from following a symbolic link planted at the path.
const noFollow = syscall.O_NOFOLLOW
