//go:build !windows

package control

import (
	"fmt"
	"io/fs"
	"net"
	"os"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxSocketPath is the longest socket path every Unix takes (macOS's sun_path is 104
// bytes with its NUL, Linux's 108).
const maxSocketPath = 103

// Listen makes Dir(dataDir) (mode 0700, owned by the agent's user) and listens on the
// socket in it, mode 0600. A socket left by an agent that died is replaced; one that
// answers means another agent runs on this data dir, which is an error. Anything
// else at the socket's path is refused rather than removed.
func Listen(dataDir string) (net.Listener, error) {
	dir := Dir(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is %s, not a directory", dir, safefile.Describe(fi.Mode()))
	}
	// Only the agent's user may enter: the socket's own mode is then not the only
	// guard, and nobody else can swap the socket for something else.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	if err := safefile.TrustedDir(dir); err != nil {
		return nil, err
	}
	path := Path(dataDir)
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("%s: the path is longer than the %d bytes a Unix socket's may be; choose a shorter --data-dir", path, maxSocketPath)
	}
	if err := clearStale(path, func(fi fs.FileInfo) bool { return fi.Mode()&fs.ModeSocket != 0 }); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
