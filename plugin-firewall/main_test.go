package main

import (
	"testing"

	"github.com/yuzugo/yuzu/sdk/sdktest"
)

func TestMain(m *testing.M) {
	removeStaleTestbeds()
	sdktest.Main(m)
}

// pluginBin returns the plugin binary, built once for the run by sdktest.Build for
// the tests that run it inside a network namespace. sdktest keeps it where everyone
// may read it, so a testbed can run it as nobody. Without a go command (the Windows
// leg's test binary under Wine) the test is skipped; only Linux tests ask for it.
func pluginBin(t testing.TB) string {
	t.Helper()
	return sdktest.Build(t, ".")
}
