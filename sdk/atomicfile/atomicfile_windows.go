package atomicfile

import (
	"io/fs"
	"os"
)

func openExclusive(name string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// replace uses os.Rename, which on Windows is MoveFileEx with MOVEFILE_REPLACE_EXISTING.
func replace(tmp, target string) error { return os.Rename(tmp, target) }

// Windows has no directory handle to flush; the rename is durable once MoveFileEx
// returns on NTFS's journal.
func syncDir(string) error { return errDirSyncUnsupported }
