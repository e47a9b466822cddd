package supervisor

import (
	"strings"
	"testing"
)

// validPluginName is the SDK's rule (sdk.validName, tested there against the regular
// expression it replaced): 1 to 64 ASCII letters, digits and underscores.
func TestValidPluginName(t *testing.T) {
	for s, want := range map[string]bool{
		"tags": true, "File_System9": true, "_": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "fire-wall": false, "a b": false,
		"a\n": false, "caf\u00e9": false, "a/b": false, ".": false,
	} {
		if got := validPluginName(s); got != want {
			t.Errorf("validPluginName(%q) = %v, want %v", s, got, want)
		}
	}
}
