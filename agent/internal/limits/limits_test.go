package limits

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	set, err := Parse("tags:memory_mib=128; *:cpus=2,tasks=100 ;filesystem:memory_mib=1024,cpus=0.5")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Limits{
		"tags":       {MemoryBytes: 128 << 20, CPUs: 2, Tasks: 100}, // from '*', whatever its place
		"filesystem": {MemoryBytes: 1024 << 20, CPUs: 0.5, Tasks: 100},
		"firewall":   {MemoryBytes: 512 << 20, CPUs: 2, Tasks: 100},
	} {
		if got := set.For(name); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if set, err := Parse(""); err != nil || set.For("x") != Default {
		t.Errorf("empty: %+v, %v; want Default", set, err)
	}
	if got := Default.String(); got != "512 MiB, 1 CPU, 256 tasks" {
		t.Errorf("Default.String() = %q", got)
	}
	for text, want := range map[string]string{
		"tags":                        "NAME:key=value",
		"tags:memory_mib=8":           "memory_mib",
		"tags:memory_mib=x":           "memory_mib",
		"tags:cpus=0":                 "cpus",
		"tags:cpus=NaN":               "cpus",
		"tags:tasks=1":                "tasks",
		"tags:swap=1":                 "unknown key",
		"tags:tasks":                  "key=value",
		"tags:tasks=20;tags:tasks=30": "twice",
		":tasks=20":                   "NAME",
		"../x:tasks=20":               "not a plugin name",
		"fire-wall:tasks=20":          "not a plugin name",
	} {
		if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error about %q", text, err, want)
		}
	}
}
