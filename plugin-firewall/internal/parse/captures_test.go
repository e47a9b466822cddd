package parse

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRealCaptures runs every parser on the real captures in testdata/captures (their
// sources are in SOURCES.md there) and holds each answer to a golden value. Every file
// there must have an entry, so a capture cannot be added without its answer.
func TestRealCaptures(t *testing.T) {
	alfState := func(b []byte) string {
		s, p := ParseALFGlobalState(b)
		return s.String() + "|" + string(p)
	}
	blockAll := func(b []byte) string {
		v, p := ParseALFBlockAll(b)
		return v.String() + "|" + string(p)
	}
	stealth := func(b []byte) string {
		v, p := ParseALFStealthMode(b)
		return v.String() + "|" + string(p)
	}
	listApps := func(b []byte) string {
		l := ParseListApps(b)
		var out []string
		for _, a := range l.Apps {
			out = append(out, "app|"+a.Path+"|"+a.Decision)
		}
		for _, p := range l.Problems {
			out = append(out, "error|"+string(p))
		}
		return strings.Join(out, "\n")
	}
	anchors := func(b []byte) string { return strings.Join(ParsePfAnchors(b), "\n") }

	golden := map[string]struct {
		read func([]byte) string
		want string
	}{
		"listapps_nixdarwin1705.txt": {listApps, strings.Join([]string{
			"app|/usr/libexec/sshd-session|block",
			"app|/usr/libexec/sshd-auth|block",
			"app|/usr/libexec/remoted|allow",
			"app|/usr/bin/python3|allow",
			"app|/usr/bin/ruby|allow",
			"app|/usr/sbin/cupsd|allow",
			"app|/usr/libexec/sharingd|allow",
			"app|/usr/libexec/sshd-keygen-wrapper|allow",
			"app|/usr/sbin/smbd|allow",
		}, "\n")},
		// The poster kept one of the seven apps: the count tells the listing is short.
		"listapps_friendbear2019.txt": {listApps, strings.Join([]string{
			"app|/Library/Java/JavaVirtualMachines/amazon-corretto-8.jdk/Contents/Home/bin/java|allow",
			"error|listapps:count:7:1",
		}, "\n")},
		"globalstate_machealthcheck8.txt":  {alfState, "enabled|"},
		"globalstate_puremac176.txt":       {alfState, "enabled|"},
		"globalstate_mcli160_state0.txt":   {alfState, "disabled|"},
		"globalstate_mcli160_state1.txt":   {alfState, "enabled|"},
		"globalstate_mcli160_state2.txt":   {alfState, "enabled|"},
		"blockall_mcli161_setblockall.txt": {blockAll, "on|"},
		"managed_multipass2387.txt": {func(b []byte) string {
			return alfState(b) + " " + blockAll(b) + " " + stealth(b) + " " + listApps(b)
		}, "unknown|globalstate:managed unknown|blockall:managed unknown|stealthmode:managed error|listapps:managed"},
		"pf_anchors_v_osquery1521.txt": {anchors,
			"com.apple\ncom.apple/200.AirDrop\ncom.apple/200.AirDrop/Bonjour\ncom.apple/250.ApplicationFirewall"},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "captures", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("captures: %v, %v", files, err)
	}
	var names []string
	for _, f := range files {
		name := filepath.Base(f)
		names = append(names, name)
		g, ok := golden[name]
		if !ok {
			t.Errorf("%s has no golden answer", name)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.read(b); got != g.want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, g.want)
		}
	}
	for name := range golden {
		if !slices.Contains(names, name) {
			t.Errorf("golden answer for missing capture %s", name)
		}
	}
}
