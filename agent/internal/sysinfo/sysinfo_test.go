package sysinfo

import (
	"runtime"
	"testing"
	"unicode/utf8"
)

func TestArch(t *testing.T) {
	for goarch, want := range map[string]string{
		"amd64": "x86_64", "arm64": "aarch64", "arm": "armv7", "386": "x86", "riscv64": "riscv64",
	} {
		if got := Arch(goarch); got != want {
			t.Errorf("Arch(%q) = %q, want %q", goarch, got, want)
		}
	}
}

func TestCurrent(t *testing.T) {
	p := Current()
	if p.OS != runtime.GOOS || p.Arch != Arch(runtime.GOARCH) {
		t.Errorf("Current() = %+v, want os %s arch %s", p, runtime.GOOS, Arch(runtime.GOARCH))
	}
	if p.Version == "" || !utf8.ValidString(p.Version) {
		t.Errorf("Current().Version = %q, want a non-empty UTF-8 version", p.Version)
	}
	if h := Hostname(); h == "" || !utf8.ValidString(h) {
		t.Errorf("Hostname() = %q", h)
	}
}
