package agentconf

import (
	"strings"
	"testing"
)

// A plugin's name in the config file: a lower-case letter or digit first, then up to
// 63 of those, '_' and '-' (the rule of the regular expression this replaced,
// ^[a-z0-9][a-z0-9_-]{0,63}$).
func TestValidPluginName(t *testing.T) {
	for s, want := range map[string]bool{
		"tags": true, "9": true, "fire-wall": true, "file_system": true,
		"a" + strings.Repeat("-", 63): true,
		"":                            false, "a" + strings.Repeat("-", 64): false, "-a": false, "_a": false,
		"Tags": false, "a b": false, "a\n": false, "caf\u00e9": false, "a.b": false,
	} {
		if got := validPluginName(s); got != want {
			t.Errorf("validPluginName(%q) = %v, want %v", s, got, want)
		}
	}
}
