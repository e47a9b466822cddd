package definition

import (
	"strings"
	"testing"
)

func TestParseRequirement(t *testing.T) {
	good := map[string]Requirement{
		"procs":            {Plugin: "procs"},
		"procs>=2.0.0":     {Plugin: "procs", MinVersion: "2.0.0"},
		" procs >= 2.0.0 ": {Plugin: "procs", MinVersion: "2.0.0"},
		"a_1>=1.0.0-rc.1":  {Plugin: "a_1", MinVersion: "1.0.0-rc.1"},
	}
	for in, want := range good {
		got, err := ParseRequirement(in)
		if err != nil || got != want {
			t.Errorf("ParseRequirement(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", ">=1.0.0", "procs>=", "procs>=2", "procs>=v2.0.0", "pro-cs", "procs>2.0.0", "procs==2.0.0"} {
		if r, err := ParseRequirement(in); err == nil {
			t.Errorf("ParseRequirement(%q) = %+v, want an error", in, r)
		}
	}
}

func TestCheckPlugins(t *testing.T) {
	have := map[string]string{"procs": "1.4.0", "tags": "1.0.0", "odd": "latest"}
	version := func(n string) (string, bool) { v, ok := have[n]; return v, ok }
	d := Definition{ID: "acme.procs.list", RequiredPlugins: []string{"procs>=2.0.0"}}
	err := d.CheckPlugins(version)
	if err == nil || err.Error() != "definition acme.procs.list requires plugin procs >= 2.0.0; this agent has procs 1.4.0" {
		t.Errorf("v1 against a v2 requirement: %v", err)
	}
	have["procs"] = "2.0.0"
	if err := d.CheckPlugins(version); err != nil {
		t.Errorf("v2 against a v2 requirement: %v", err)
	}
	have["procs"] = "2.0.0-rc.1"
	if err := d.CheckPlugins(version); err == nil {
		t.Error("a pre-release of 2.0.0 met 2.0.0")
	}
	for _, c := range []struct{ req, want string }{
		{"missing", "requires plugin missing, which this agent does not have"},
		{"odd>=1.0.0", `this agent's odd version "latest" is not a semantic version`},
		{"tags", ""},
	} {
		err := Definition{ID: "x.y", RequiredPlugins: []string{c.req}}.CheckPlugins(version)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.req, err, c.want)
		}
	}
}
