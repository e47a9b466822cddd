//go:build unix

package store

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// vetFile refuses an open regular file, by its stat fi, unless this process's
// effective user owns it (root included only when the agent runs as root) and it has
// a single link.
func vetFile(f *os.File, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner or link count to check", f.Name())
	}
	if euid := os.Geteuid(); st.Uid != uint32(euid) {
		return fmt.Errorf("%s is owned by uid %d, not by this process's uid %d", f.Name(), st.Uid, euid)
	}
	if n := uint64(st.Nlink); n > 1 {
		return tooManyLinks(f.Name(), n)
	}
	return nil
}

// setMode gives a lock file just created exactly fileMode: the umask may have taken
// bits from it.
func setMode(f *os.File) error { return f.Chmod(fileMode) }

// narrowMode sets an existing file of ours, by its stat fi, to fileMode when its mode
// differs (wider permissions, or a setuid, setgid or sticky bit).
func narrowMode(f *os.File, fi fs.FileInfo) error {
	if fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) == fileMode {
		return nil
	}
	return f.Chmod(fileMode)
}
