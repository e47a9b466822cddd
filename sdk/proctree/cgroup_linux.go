package proctree

import (
	"os"
	"path/filepath"
	"strings"
)

func endOwnCgroup() {
	dir := os.Getenv(EnvCgroup)
	if dir == "" || !filepath.IsAbs(dir) {
		return
	}
	// Only the cgroup this process is in: a stale or forged variable must not end
	// anyone else's.
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && p != "/" && strings.HasSuffix(dir, p) {
			f, err := os.OpenFile(filepath.Join(dir, "cgroup.kill"), os.O_WRONLY, 0)
			if err != nil {
				return
			}
			_, _ = f.WriteString("1")
			_ = f.Close()
			return
		}
	}
}
