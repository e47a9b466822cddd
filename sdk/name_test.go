package sdk

import (
	"regexp"
	"strings"
	"testing"
)

// ValidName keeps the rule the regular expression it replaced stated.
func TestValidNameMatchesRule(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)
	for _, s := range nameSamples() {
		if got, want := ValidName(s), re.MatchString(s); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want)
		}
	}
}

// nameSamples: every single byte, and names at and around the length bounds.
func nameSamples() []string {
	var out []string
	for b := 0; b < 256; b++ {
		out = append(out, string([]byte{byte(b)}), "a"+string([]byte{byte(b)}), string([]byte{byte(b)})+"a")
	}
	for _, n := range []int{0, 1, 63, 64, 65, 200} {
		out = append(out, strings.Repeat("a", n), strings.Repeat("_", n), strings.Repeat("Z9", n/2), strings.Repeat("-", n))
	}
	return append(out, "tags", "file_system", "Fire-wall", "caf\u00e9", "a b", "a\n")
}
