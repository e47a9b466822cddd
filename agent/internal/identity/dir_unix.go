//go:build !windows

package identity

import (
	"errors"
	"fmt"
	"os"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// ensureDir makes the identity directory mode 0700 and checks that only root or the
// agent's user can change it.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := safefile.Trusted(fi, false); err != nil {
		return fmt.Errorf("%s is %w", dir, err)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// writePrivate writes a file only the agent's user may read (mode 0600), whole or not
// at all.
func writePrivate(path string, b []byte) error {
	err := atomicfile.WriteMode(path, b, 0o600)
	var syncErr *atomicfile.DirSyncError
	if errors.As(err, &syncErr) {
		return nil
	}
	return err
}
