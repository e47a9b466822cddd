package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// go-plugin makes a directory for each child's socket (plugin-dir*) in the temporary
// directory and removes it only when the agent kills the child through it: a child
// killed for its memory, or an `exec` that ends with its children, left one each in
// TMPDIR (about 60 an hour for a plugin that keeps hitting its limit). The agent gives
// go-plugin a directory of its own instead, removes each child's directory as soon as
// the child has exited, the whole directory when the supervisor closes, and, at
// start, the directories of agents that died without closing.

// socketRootPrefix starts the name of an agent's socket directory in the temporary
// directory: yuzu-sock-<pid>-<random>. Short, because a socket's path has a length
// limit (108 bytes on Linux, 104 on macOS) and go-plugin adds about 40 bytes below it.
const socketRootPrefix = "yuzu-sock-"

// maxSocketBase is the longest temporary directory the socket directories go under;
// past it (a long TMPDIR, such as macOS's per-user one) they go under /tmp, where a
// socket path fits.
const maxSocketBase = 40

// NewSocketRoot makes this agent's socket directory (mode 0700) after removing those
// left by agents that are gone. An error leaves go-plugin's default.
func NewSocketRoot(log hclog.Logger) string {
	base := os.TempDir()
	if len(base) > maxSocketBase && runtime.GOOS != "windows" {
		base = "/tmp"
	}
	sweepSocketRoots(base, log)
	dir, err := os.MkdirTemp(base, socketRootPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		log.Warn("no socket directory of the agent's own; plugin sockets go to the temporary directory", "error", err)
		return ""
	}
	return dir
}

// sweepSocketRoots removes the socket directories in parent of agents that no longer
// run. Only directories this user owns are touched: parent is writable by everyone.
func sweepSocketRoots(parent string, log hclog.Logger) {
	des, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, de := range des {
		rest, ok := strings.CutPrefix(de.Name(), socketRootPrefix)
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		path := filepath.Join(parent, de.Name())
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() || safefile.Owned(fi) != nil {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			log.Debug("a dead agent's socket directory stays", "path", path, "error", err)
		}
	}
}

// RemoveSocketDir removes one child's socket directory, which go-plugin made inside
// root; anything else is left alone.
func RemoveSocketDir(root, dir string) {
	if root == "" || dir == "" || filepath.Dir(dir) != root {
		return
	}
	_ = os.RemoveAll(dir)
}
