//go:build !windows

package cli

import (
	"os"
	"testing"
)

// writePrivateFile writes a file only its owner may read.
func writePrivateFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
