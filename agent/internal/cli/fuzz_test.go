package cli

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseArgs feeds arbitrary argument lists (NUL-separated) to the flag parser: it
// must never panic, refuse with a usage error or accept, and what it accepts must hold
// the invariants the rest of the agent relies on.
func FuzzParseArgs(f *testing.F) {
	f.Add("--data-dir\x00/d\x00exec\x00tags\x00count")
	f.Add("exec\x00--timeout=1e300\x00tags")
	f.Add("---data-dir\x00x")
	f.Add("-h")
	f.Add("exec\x00--\x00--version")
	f.Add("--log-level\x00\xff")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		cfg, pos, err := parseArgs(args, func(string) string { return "" })
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("parseArgs(%q): error %v is not a usage error", args, err)
			}
			return
		}
		if cfg.timeout <= 0 || cfg.timeout > maxTimeout {
			t.Fatalf("parseArgs(%q) accepted timeout %s", args, cfg.timeout)
		}
		for _, s := range append(pos, cfg.pluginDir, cfg.dataDir, cfg.agentID, cfg.logLevel, cfg.logFormat) {
			if !utf8.ValidString(s) {
				t.Fatalf("parseArgs(%q) let invalid UTF-8 through: %q", args, s)
			}
		}
	})
}

// FuzzParseParams: key=value arguments either parse into a map of valid UTF-8 keys
// and values, each key once and non-empty, or are a usage error.
func FuzzParseParams(f *testing.F) {
	f.Add("key=env\x00value=prod")
	f.Add("=x")
	f.Add("k=1\x00k=2")
	f.Add("k=\xff")
	f.Add("a=b=c")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		m, err := parseParams(args)
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("parseParams(%q): %v is not a usage error", args, err)
			}
			return
		}
		if len(m) != len(args) {
			t.Fatalf("parseParams(%q) = %d entries for %d arguments", args, len(m), len(args))
		}
		for k, v := range m {
			if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
				t.Fatalf("parseParams(%q) accepted %q=%q", args, k, v)
			}
		}
	})
}
