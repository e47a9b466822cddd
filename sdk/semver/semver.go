// Package semver reads and orders semantic versions (semver.org 2.0.0), the one rule
// every version comparison of the project uses: a definition's minAgentVersion and
// requiredPlugins, a plugin catalog's upgrades, downgrades and version floors, and the
// agent's own updates.
//
// Build metadata (`+...`) never orders two versions: 1.2.0+87 and 1.2.0+88 have the
// same precedence, as the specification says. Where the difference matters (the same
// version shipped as other bytes), callers compare the bytes, not the versions.
package semver

import "strings"

// Version is a parsed semantic version.
type Version struct {
	Major, Minor, Patch string // decimal digits, no leading zero (except "0")
	Pre                 string // pre-release identifiers without the leading "-", or ""
	Build               string // build metadata without the leading "+", or ""
}

// Parse reads MAJOR.MINOR.PATCH[-PRE][+BUILD] exactly as semver.org writes it: no
// leading "v", no leading zeros in numbers, identifiers of [0-9A-Za-z-]. The numbers
// may be of any length.
func Parse(s string) (Version, bool) {
	var v Version
	core, build, hasBuild := strings.Cut(s, "+")
	if hasBuild {
		if !identifiers(build, false) {
			return Version{}, false
		}
		v.Build = build
	}
	core, pre, hasPre := strings.Cut(core, "-")
	if hasPre {
		if !identifiers(pre, true) {
			return Version{}, false
		}
		v.Pre = pre
	}
	nums := strings.Split(core, ".")
	if len(nums) != 3 {
		return Version{}, false
	}
	for _, n := range nums {
		if !numeric(n) {
			return Version{}, false
		}
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	return v, true
}

// Valid reports whether s is a semantic version.
func Valid(s string) bool {
	_, ok := Parse(s)
	return ok
}

// String writes the version back as semver.org does.
func (v Version) String() string {
	s := v.Major + "." + v.Minor + "." + v.Patch
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// numeric is a number without a leading zero.
func numeric(s string) bool {
	return isDigits(s) && (s == "0" || s[0] != '0')
}

// identifiers checks dot-separated identifiers; in a pre-release a numeric identifier
// may not have a leading zero.
func identifiers(s string, pre bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') {
				return false
			}
		}
		if pre && isDigits(id) && !numeric(id) {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Compare orders a and b by precedence: -1, 0 or +1. Build metadata is ignored.
func (a Version) Compare(b Version) int {
	for _, p := range [][2]string{{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch}} {
		if c := compareNumeric(p[0], p[1]); c != 0 {
			return c
		}
	}
	switch {
	case a.Pre == b.Pre:
		return 0
	case a.Pre == "":
		return 1 // a release follows its pre-releases
	case b.Pre == "":
		return -1
	}
	fa, fb := strings.Split(a.Pre, "."), strings.Split(b.Pre, ".")
	for i := 0; i < len(fa) && i < len(fb); i++ {
		na, nb := isDigits(fa[i]), isDigits(fb[i])
		var c int
		switch {
		case na && nb:
			c = compareNumeric(fa[i], fb[i])
		case na:
			c = -1 // numeric identifiers sort before alphanumeric ones
		case nb:
			c = 1
		default:
			c = strings.Compare(fa[i], fb[i])
		}
		if c != 0 {
			return sign(c)
		}
	}
	return sign(len(fa) - len(fb))
}

// Compare orders two version strings by precedence; ok is false when either is not a
// semantic version (and the order is then meaningless).
func Compare(a, b string) (c int, ok bool) {
	va, oka := Parse(a)
	vb, okb := Parse(b)
	if !oka || !okb {
		return 0, false
	}
	return va.Compare(vb), true
}

// compareNumeric compares two strings of decimal digits of any length.
func compareNumeric(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return sign(len(a) - len(b))
	}
	return strings.Compare(a, b)
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
