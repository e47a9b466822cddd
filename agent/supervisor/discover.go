package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/yuzugo/yuzu/agent/internal/manifest"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// BinaryPrefix starts the file name of every plugin binary.
const BinaryPrefix = "yuzu-plugin-"

// binary is one plugin binary found in the plugin dir.
type binary struct {
	name     string // plugin name from the file name
	path     string
	checksum []byte // from the manifest; nil when refused
	refused  error  // why it may not run, or nil
}

// PluginName returns the plugin name a file name stands for, and whether the file
// name is a plugin binary's at all.
func PluginName(file string) (string, bool) {
	if !strings.HasPrefix(file, BinaryPrefix) {
		return "", false
	}
	name := strings.TrimPrefix(file, BinaryPrefix)
	if hostOS == "windows" {
		name = strings.TrimSuffix(name, ".exe")
	}
	return name, name != ""
}

// discover lists the plugin binaries of dir and decides for each whether it may run.
// Files that are not named like a plugin binary are ignored. An error means the
// directory itself cannot be read.
func discover(dir string) (map[string]*binary, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("plugin dir %s: %w", dir, err)
	}
	sums, merr := manifest.Read(dir)
	found := map[string]*binary{}
	for _, e := range entries {
		name, ok := PluginName(e.Name())
		if !ok || strings.Contains(e.Name(), ".tmp.") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b := &binary{name: name, path: path}
		found[name] = b
		switch {
		case !sdk.ValidName(name):
			b.refused = &RefusedError{Path: path, Reason: "plugin name must be 1-64 letters, digits or underscores"}
		case merr != nil && errors.Is(merr, fs.ErrNotExist):
			b.refused = &RefusedError{Path: path, Reason: "no " + manifest.FileName + " in the plugin dir"}
		case merr != nil:
			b.refused = &RefusedError{Path: path, Reason: "unusable manifest: " + merr.Error()}
		default:
			b.refused = checkFile(path)
			if b.refused == nil {
				sum, listed := sums[e.Name()]
				if !listed {
					b.refused = &RefusedError{Path: path, Reason: "not listed in " + manifest.FileName + " (add it with `yuzu-agent plugins add`)"}
				} else {
					b.checksum = sum
				}
			}
		}
	}
	return found, nil
}

// checkFile refuses anything but a regular file (not a symbolic link) owned by root or
// the agent's user that nobody else can change. It is the early check that lets
// `plugins` show a refusal; the launcher checks again on the descriptor it runs. On
// Windows safefile.TrustedPath opens the file to read its owner and DACL.
func checkFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return &RefusedError{Path: path, Reason: err.Error()}
	}
	if !fi.Mode().IsRegular() {
		return &RefusedError{Path: path, Reason: "is " + safefile.Describe(fi.Mode()) + ", not a regular file"}
	}
	if err := safefile.TrustedPath(path, fi, false); err != nil {
		return &RefusedError{Path: path, Reason: err.Error()}
	}
	return nil
}

// checkDir refuses a plugin dir that someone other than root or the agent's user could
// change, itself or any parent (safefile.TrustedDir): whoever can write there can make
// the agent run anything as root.
func checkDir(dir string) error {
	if err := safefile.TrustedDir(dir); err != nil {
		return fmt.Errorf("plugin dir %w", err)
	}
	return nil
}

func sortedNames(m map[string]*binary) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
