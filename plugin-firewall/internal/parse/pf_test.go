package parse

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePfInfo(t *testing.T) {
	tests := []struct {
		in   string
		want Status
	}{
		{"Status: Enabled for 0 days 00:00:15           Debug: Urgent", Enabled},
		{"Status: Disabled for 0 days 00:01:02           Debug: Urgent\n\nState Table   Total   Rate\n", Disabled},
		{"", Unknown},
		{"pfctl: /dev/pf: Permission denied", Unknown},
		{"status: enabled", Unknown},
	}
	for _, tt := range tests {
		if got := ParsePfInfo([]byte(tt.in)); got != tt.want {
			t.Errorf("ParsePfInfo(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParsePfAnchors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want []string
	}{
		{"capture", readTestdata(t, "pfctl_anchors.txt"), []string{"NordVPN", "com.apple"}},
		{"empty", nil, nil},
		{"blank lines and crlf", []byte("\r\n  a\r\n\t\n b \n"), []string{"a", "b "}},
	}
	for _, tt := range tests {
		if got := ParsePfAnchors(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestPfRules(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		lines []string
	}{
		{"capture", readTestdata(t, "pfctl_rules_apple.txt"),
			[]string{`scrub-anchor "com.apple/*" all fragment reassemble`, `anchor "com.apple/*" all`}},
		{"empty", nil, nil},
		{"blank and crlf", []byte("pass all\r\n \t\r\n\r\n  block in\n"), []string{"pass all", "  block in"}},
	}
	for _, tt := range tests {
		if got := PfRuleLines(tt.in); !slices.Equal(got, tt.lines) {
			t.Errorf("%s: lines %q, want %q", tt.name, got, tt.lines)
		}
		if got := CountPfRules(tt.in); got != len(tt.lines) {
			t.Errorf("%s: count %d, want %d", tt.name, got, len(tt.lines))
		}
	}
}

func TestStatusStrings(t *testing.T) {
	for s, want := range map[Status][2]string{
		Enabled: {"enabled", "active"}, Disabled: {"disabled", "inactive"}, Unknown: {"unknown", "unknown"},
		Status(42): {"unknown", "unknown"},
	} {
		if s.String() != want[0] || s.Activity() != want[1] {
			t.Errorf("%d: %q/%q, want %q/%q", s, s.String(), s.Activity(), want[0], want[1])
		}
	}
}

func FuzzParsePfInfo(f *testing.F) {
	f.Add([]byte("Status: Enabled for 0 days"))
	f.Add([]byte("Status: Disabled"))
	f.Fuzz(func(t *testing.T, b []byte) {
		switch ParsePfInfo(b) {
		case Disabled:
			if !strings.Contains(string(b), "Status: Disabled") {
				t.Fatalf("disabled without support in %q", b)
			}
		case Enabled:
			if !strings.Contains(string(b), "Status: Enabled") {
				t.Fatalf("enabled without support in %q", b)
			}
		}
	})
}

func FuzzPfLists(f *testing.F) {
	seedTestdata(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		nl := strings.Count(string(b), "\n") + 1
		anchors := ParsePfAnchors(b)
		if len(anchors) > nl {
			t.Fatalf("%d anchors from %d lines", len(anchors), nl)
		}
		for _, a := range anchors {
			if a == "" || strings.ContainsAny(a, "\r\n") || strings.HasPrefix(a, " ") || strings.HasPrefix(a, "\t") {
				t.Fatalf("anchor %q", a)
			}
		}
		rules := PfRuleLines(b)
		if len(rules) > nl || len(rules) != CountPfRules(b) {
			t.Fatalf("%d rules from %d lines", len(rules), nl)
		}
		for _, r := range rules {
			if strings.TrimLeft(r, " \t") == "" || strings.ContainsAny(r, "\r\n") {
				t.Fatalf("rule line %q", r)
			}
		}
	})
}
