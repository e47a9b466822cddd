package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

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

func TestReadCapped(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte(strings.Repeat("x", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readCapped(small, 100); err != nil || len(b) != 100 {
		t.Fatalf("at the cap: %d bytes, %v", len(b), err)
	}
	if _, err := readCapped(small, 99); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("over the cap: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 200<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readCapped(big, 300<<10); err != nil || len(b) != 200<<10 {
		t.Fatalf("growing buffer: %d bytes, %v", len(b), err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	if _, err := readCapped(link, 100); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("symlink: %v, want ELOOP", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readCapped(fifo, 100); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("fifo: %v", err)
	}
	if _, err := readCapped(filepath.Join(dir, "missing"), 100); err == nil {
		t.Fatal("missing file read without error")
	}
}
