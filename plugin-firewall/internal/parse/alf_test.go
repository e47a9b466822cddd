package parse

import (
	"slices"
	"strings"
	"testing"
)

func TestParseALFGlobalState(t *testing.T) {
	tests := []struct {
		in       string
		want     Status
		blockAll bool
	}{
		{"Firewall is disabled. (State = 0)", Disabled, false},
		{"Firewall is enabled. (State = 1)", Enabled, false},
		{"Firewall is enabled. (State = 2)", Enabled, true},
		{"Firewall is set to block all incoming connections. (State = 2)", Enabled, true},
		{"Firewall is enabled. (State = 0)", Disabled, false}, // the number beats the prose
		{"Firewall is enabled.", Enabled, false},
		{"Firewall is disabled.", Disabled, false},
		{"enabled then disabled", Disabled, false},
		{"Firewall is enabled. (State = 7)", Enabled, false},
		{"Mystery text. (State = 7)", Unknown, false},
		{"Firewall is enabled. (State = 10)", Enabled, false},
		{"Mystery text. (State = 10)", Unknown, false},
		{"Mystery text. (State = 21)", Unknown, false}, // not block-all: two digits
		{"Mystery text. (State = -1)", Unknown, false},
		{"Firewall is enabled. (State = ", Enabled, false},
		{"Mystery. (State = ", Unknown, false},
		{"(State = 1", Enabled, false},
		{"", Unknown, false},
		{"sh: /usr/libexec/ApplicationFirewall/socketfilterfw: No such file or directory", Unknown, false},
		{"Firewall is disabled. (State = 0)\n", Disabled, false},
	}
	for _, tt := range tests {
		got, blockAll := ParseALFGlobalState([]byte(tt.in))
		if got != tt.want || blockAll != tt.blockAll {
			t.Errorf("ParseALFGlobalState(%q) = %v, %v; want %v, %v", tt.in, got, blockAll, tt.want, tt.blockAll)
		}
	}
}

func TestParseListAppsCapture(t *testing.T) {
	apps := ParseListApps(readTestdata(t, "listapps_8.txt"))
	wantPaths := []string{
		"/usr/local/libexec/remotepairingdeviced", "/usr/libexec/remoted", "/usr/bin/python3",
		"/usr/bin/ruby", "/usr/sbin/cupsd", "/usr/libexec/sharingd",
		"/usr/libexec/sshd-keygen-wrapper", "/usr/sbin/smbd",
	}
	var gotPaths []string
	for _, a := range apps {
		gotPaths = append(gotPaths, a.Path)
		if a.Decision != "allow" {
			t.Errorf("%s: decision %q, want allow", a.Path, a.Decision)
		}
	}
	if !slices.Equal(gotPaths, wantPaths) {
		t.Errorf("paths = %q\nwant %q", gotPaths, wantPaths)
	}
}

func TestParseListApps(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []App
	}{
		{"block", "1 : /usr/bin/synthetic \n             (Block incoming connections)\n",
			[]App{{"/usr/bin/synthetic", "block"}}},
		{"future wording", "1 : /usr/bin/mystery \n             (Some future wording)\n",
			[]App{{"/usr/bin/mystery", "unknown"}}},
		{"empty", "", nil},
		{"header only", "Total number of apps = 0 \n", nil},
		{"app then app", "1 : /a \n2 : /b \n\t(Allow incoming connections)\n",
			[]App{{"/a", "unknown"}, {"/b", "allow"}}},
		{"app at end", "1 : /a \n", []App{{"/a", "unknown"}}},
		{"crlf", "1 : /a \r\n  (Allow incoming connections)\r\n", []App{{"/a", "allow"}}},
		{"not digits", "x1 : /a\n  (Allow incoming connections)\n", nil},
		{"no number", " : /a\n  (Allow incoming connections)\n", nil},
		{"path with colon", "3 : /Applications/A : B.app \n (Allow incoming connections)\n",
			[]App{{"/Applications/A : B.app", "allow"}}},
		{"decision case differs", "1 : /a\n (allow incoming connections)\n", []App{{"/a", "unknown"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseListApps([]byte(tt.in))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseALFGlobalState(f *testing.F) {
	for _, s := range []string{"Firewall is enabled. (State = 1)", "(State = 2)", "(State = 0", "disabled", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, blockAll := ParseALFGlobalState(b)
		text := string(b)
		switch s {
		case Disabled:
			if !strings.Contains(text, "disabled") && !strings.Contains(text, "(State = 0") {
				t.Fatalf("disabled without support in %q", text)
			}
		case Enabled:
			if !strings.Contains(text, "enabled") && !strings.Contains(text, "(State = 1") &&
				!strings.Contains(text, "(State = 2") {
				t.Fatalf("enabled without support in %q", text)
			}
		}
		if blockAll && (s != Enabled || !strings.Contains(text, "(State = 2")) {
			t.Fatalf("block-all without State = 2 in %q", text)
		}
	})
}

func FuzzParseListApps(f *testing.F) {
	seedTestdata(f)
	f.Add([]byte("1 : /a \n (Block incoming connections)\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		apps := ParseListApps(b)
		text := strings.ReplaceAll(string(b), "\r", "")
		if len(apps) > strings.Count(text, " : ") {
			t.Fatalf("%d apps from %d separators", len(apps), strings.Count(text, " : "))
		}
		for _, a := range apps {
			switch a.Decision {
			case "allow":
				if !strings.Contains(text, "(Allow incoming connections)") {
					t.Fatalf("allow without support in %q", text)
				}
			case "block":
				if !strings.Contains(text, "(Block incoming connections)") {
					t.Fatalf("block without support in %q", text)
				}
			case "unknown":
			default:
				t.Fatalf("decision %q", a.Decision)
			}
			if strings.ContainsAny(a.Path, "\r\n") || strings.HasSuffix(a.Path, " ") {
				t.Fatalf("path %q", a.Path)
			}
		}
	})
}
