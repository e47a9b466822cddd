package mounts

import "testing"

func TestLoadLive(t *testing.T) {
	tab, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if tab.Len() == 0 {
		t.Fatal("live table is empty")
	}
	if got := tab.Classify("/proc/self"); got != Pseudo {
		t.Errorf("/proc/self = %v, want pseudo", got)
	}
	if got := tab.Classify(t.TempDir()); got != Local {
		t.Errorf("temp dir = %v, want local", got)
	}
}
