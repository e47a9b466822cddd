package proc

import (
	"slices"
	"testing"
)

func TestChildEnv(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/root", "SECRET_TOKEN=x", "LC_TIME=C", "LANG=C.UTF-8", "YUZU_DATA_DIR=/d",
		"AWS_SECRET_ACCESS_KEY=y", "TZ=UTC", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus", "systemroot=C:\\Windows", "bogus"}
	got := ChildEnv(in, "linux")
	want := []string{"PATH=/bin", "HOME=/root", "LC_TIME=C", "LANG=C.UTF-8", "TZ=UTC", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus"}
	if !slices.Equal(got, want) {
		t.Errorf("linux: got %q, want %q", got, want)
	}
	got = ChildEnv(in, "windows")
	if !slices.Contains(got, "systemroot=C:\\Windows") || slices.Contains(got, "SECRET_TOKEN=x") {
		t.Errorf("windows: got %q", got)
	}
}
