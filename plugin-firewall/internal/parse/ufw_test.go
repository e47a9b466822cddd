package parse

import (
	"slices"
	"strings"
	"testing"
)

func TestParseUfwStatus(t *testing.T) {
	tests := []struct {
		in   string
		want Status
	}{
		{"Status: active\n", Enabled},
		{"Status: inactive\n", Disabled},
		{"", Unknown},
		{"sh: ufw: command not found", Unknown},
		{"Status: active", Enabled},
		{"Status: active  \r\n\n     To   Action   From\n", Enabled},
		{"Status: activating\n", Unknown},
		{" Status: inactive\n", Unknown},
		{"ERROR: You need to be root to run this script\n", Unknown},
		{"\nStatus: inactive\n", Unknown},
	}
	for _, tt := range tests {
		if got := ParseUfwStatus([]byte(tt.in)); got != tt.want {
			t.Errorf("ParseUfwStatus(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseUfwRules(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want []UfwRule
	}{
		{"numbered", readTestdata(t, "ufw_numbered_contract.txt"), []UfwRule{
			{"1", "22/tcp", "ALLOW IN", "Anywhere"},
			{"2", "80,443/tcp", "ALLOW IN", "192.168.1.0/24"},
		}},
		{"padded, out, comments and v6", readTestdata(t, "ufw_numbered_testbed.txt"), []UfwRule{
			{"1", "22/tcp", "ALLOW IN", "Anywhere"},
			{"2", "5432/tcp", "ALLOW IN", "10.0.0.0/8"},
			{"3", "25/tcp", "DENY OUT", "Anywhere"},
			{"4", "22/tcp (v6)", "ALLOW IN", "Anywhere (v6)"},
			{"5", "25/tcp (v6)", "DENY OUT", "Anywhere (v6)"},
		}},
		{"inactive", []byte("Status: inactive\n"), nil},
		{"unterminated", []byte("[unterminated bracket with no close\n"), nil},
		{"application profile", []byte("[ 4] WWW Full                   ALLOW IN    Anywhere\n"),
			[]UfwRule{{"4", "WWW Full", "ALLOW IN", "Anywhere"}}},
		{"missing columns", []byte("[12] 22/tcp\n[13]\n"),
			[]UfwRule{{"12", "22/tcp", "", ""}, {"13", "", "", ""}}},
		{"indented is not a rule", []byte(" [ 1] 22/tcp  ALLOW IN  Anywhere\n"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseUfwRules(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func FuzzParseUfw(f *testing.F) {
	seedTestdata(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		first, _, _ := strings.Cut(strings.ReplaceAll(string(b), "\r", ""), "\n")
		switch ParseUfwStatus(b) {
		case Disabled:
			if !strings.HasPrefix(first, "Status: inactive") {
				t.Fatalf("inactive without support in %q", b)
			}
		case Enabled:
			if !strings.HasPrefix(first, "Status: active") {
				t.Fatalf("active without support in %q", b)
			}
		}
		rules := ParseUfwRules(b)
		if n := strings.Count("\n"+strings.ReplaceAll(string(b), "\r", ""), "\n["); len(rules) > n {
			t.Fatalf("%d rules from %d bracketed lines", len(rules), n)
		}
		for _, r := range rules {
			if strings.ContainsAny(r.Index, "\r\n]") || strings.Trim(r.Index, " ") != r.Index {
				t.Fatalf("index %q of %+v", r.Index, r)
			}
			for _, s := range []string{r.To, r.Action, r.From} {
				if strings.ContainsAny(s, "\r\n") || strings.TrimSpace(s) != s || strings.Contains(s, "  ") {
					t.Fatalf("column %q of %+v", s, r)
				}
			}
		}
	})
}
