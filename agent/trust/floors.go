package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// FloorsName is the file of version floors in the trust state dir.
const FloorsName = "floors.json"

// Floors are the lowest version each plugin may be installed at: the highest version
// installed so far. They live in the data dir, not the plugin dir, so that a plugin
// dir replaced wholesale (an old package, a restored backup) does not reset them. A
// signed but older build is refused below its floor unless the operator allows the
// downgrade, which also lowers the floor: an old build that was validly signed once
// (and perhaps fixed since) cannot be brought back by whoever can hand the agent a
// file or a fleet command.
type Floors struct {
	path     string
	Versions map[string]string
}

// LoadFloors reads the floors kept in stateDir; none is an empty set.
func LoadFloors(stateDir string) (*Floors, error) {
	f := &Floors{path: filepath.Join(stateDir, FloorsName), Versions: map[string]string{}}
	if stateDir == "" {
		return f, nil
	}
	data, err := readTrusted(f.path, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("version floors: %w", err)
	}
	if err := json.Unmarshal(data, &f.Versions); err != nil {
		return nil, fmt.Errorf("version floors %s: %w", f.path, err)
	}
	if f.Versions == nil {
		f.Versions = map[string]string{}
	}
	return f, nil
}

// Floor is a plugin's floor, "" when it has none.
func (f *Floors) Floor(name string) string { return f.Versions[name] }

// Raise makes v the plugin's floor when v is higher (or the plugin has none); a
// version that is not semantic never becomes a floor. It reports whether it changed.
func (f *Floors) Raise(name, v string) bool {
	if !semver.Valid(v) {
		return false
	}
	if cur := f.Versions[name]; cur != "" {
		if c, ok := semver.Compare(v, cur); ok && c <= 0 {
			return false
		}
	}
	f.Versions[name] = v
	return true
}

// Set makes v the plugin's floor, lower or not: an allowed downgrade, or a rollback.
// An empty or unordered v clears it.
func (f *Floors) Set(name, v string) {
	if !semver.Valid(v) {
		delete(f.Versions, name)
		return
	}
	f.Versions[name] = v
}

// Save writes the floors (0644, atomically).
func (f *Floors) Save() error {
	if f.path == "" || filepath.Dir(f.path) == "." {
		return nil
	}
	data, _ := json.MarshalIndent(f.Versions, "", "  ")
	return atomicfile.WriteMode(f.path, append(data, '\n'), 0o644)
}
