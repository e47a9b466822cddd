package definition

import (
	"fmt"
	"strings"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// Requirement is one entry of spec.compatibility.requiredPlugins: a plugin the
// definition needs, and the lowest version of it that will do ("" for any).
//
// An entry is written `NAME` or `NAME >= VERSION` (blanks around `>=` optional), so
// that a definition stays a list of strings, the upstream shape: an upstream server
// that does not read versions sees an entry it cannot match and does not dispatch,
// which fails safe.
type Requirement struct {
	Plugin     string
	MinVersion string
}

// String writes the requirement as a definition does.
func (r Requirement) String() string {
	if r.MinVersion == "" {
		return r.Plugin
	}
	return r.Plugin + ">=" + r.MinVersion
}

// ParseRequirement reads one requiredPlugins entry.
func ParseRequirement(s string) (Requirement, error) {
	name, ver, versioned := strings.Cut(s, ">=")
	r := Requirement{Plugin: strings.TrimSpace(name)}
	if !sdk.ValidName(r.Plugin) {
		return Requirement{}, fmt.Errorf("%q: want a plugin name (1-64 letters, digits or underscores), optionally followed by >= VERSION", s)
	}
	if versioned {
		r.MinVersion = strings.TrimSpace(ver)
		if !semver.Valid(r.MinVersion) {
			return Requirement{}, fmt.Errorf("%q: %q is not a semantic version such as 2.0.0", s, r.MinVersion)
		}
	}
	return r, nil
}

// Requirements returns the definition's requiredPlugins, parsed. Parse has checked
// them already; a Definition built by hand with a bad entry gets the error here.
func (d Definition) Requirements() ([]Requirement, error) {
	out := make([]Requirement, 0, len(d.RequiredPlugins))
	for _, s := range d.RequiredPlugins {
		r, err := ParseRequirement(s)
		if err != nil {
			return nil, fmt.Errorf("definition %s: requiredPlugins %w", d.ID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// CheckPlugins checks the requirements against the plugins a device has: version
// returns a plugin's version and whether it is there at all. The error names the
// definition, the plugin and both versions.
func CheckPlugins(reqs []Requirement, what string, version func(plugin string) (string, bool)) error {
	for _, r := range reqs {
		have, ok := version(r.Plugin)
		if !ok {
			return fmt.Errorf("%s requires plugin %s, which this agent does not have", what, r)
		}
		if r.MinVersion == "" {
			continue
		}
		c, comparable := semver.Compare(have, r.MinVersion)
		switch {
		case !comparable:
			return fmt.Errorf("%s requires plugin %s >= %s; this agent's %s version %q is not a semantic version", what, r.Plugin, r.MinVersion, r.Plugin, have)
		case c < 0:
			return fmt.Errorf("%s requires plugin %s >= %s; this agent has %s %s", what, r.Plugin, r.MinVersion, r.Plugin, have)
		}
	}
	return nil
}

// CheckPlugins is the package function for this definition's own requirements.
func (d Definition) CheckPlugins(version func(plugin string) (string, bool)) error {
	reqs, err := d.Requirements()
	if err != nil {
		return err
	}
	return CheckPlugins(reqs, "definition "+d.ID, version)
}
