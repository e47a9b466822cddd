package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// holdWithoutShareDelete opens path the way a virus scanner or a backup agent does:
// for reading, sharing read and write with others but not delete. It returns the
// function that lets go, which may be called more than once; the test's cleanup calls
// it too.
func holdWithoutShareDelete(t *testing.T, path string) (release func()) {
	t.Helper()
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE,
		nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	var once sync.Once
	release = func() { once.Do(func() { windows.CloseHandle(h) }) }
	t.Cleanup(release)
	return release
}

// retries records the errors of the attempts rename retries, calling also (when not
// nil) with each.
func retries(t *testing.T, also func(n int)) *[]error {
	t.Helper()
	var seen []error
	testHookRenameRetry = func(err error) {
		seen = append(seen, err)
		if also != nil {
			also(len(seen))
		}
	}
	t.Cleanup(func() { testHookRenameRetry = nil })
	return &seen
}

func TestWriteReplacesOnWindows(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "state.json")
	for _, want := range []string{"first", "second, longer", ""} {
		if err := Write(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); got != want {
			t.Errorf("content %q, want %q", got, want)
		}
	}
	noTempSiblings(t, filepath.Dir(path))
}

// A process holding the target without FILE_SHARE_DELETE makes the rename fail until
// it lets go; the write waits for that and then replaces the content. The holder here
// lets go once the write has met it.
func TestWriteWaitsForAHolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	release := holdWithoutShareDelete(t, path)
	seen := retries(t, func(n int) {
		if n == 1 {
			release()
		}
	})
	if err := Write(path, []byte("new")); err != nil {
		t.Fatalf("Write: %v (attempts retried: %v)", err, *seen)
	}
	if len(*seen) == 0 {
		t.Fatal("the rename went through while another handle held the target without FILE_SHARE_DELETE")
	}
	if !heldOpen((*seen)[0]) {
		t.Errorf("the held target failed the rename with %v, want a sharing violation or access denied", (*seen)[0])
	}
	t.Logf("the held target's first rename failed with: %v", (*seen)[0])
	if got := readFile(t, path); got != "new" {
		t.Errorf("content %q, want new", got)
	}
	noTempSiblings(t, dir)
}

// A holder that never lets go: the write gives up after the bound with the system's
// error, having retried, and leaves the old content and no temp file.
func TestWriteGivesUpOnAHolderThatStays(t *testing.T) {
	old := renameRetryFor
	renameRetryFor = 200 * time.Millisecond
	t.Cleanup(func() { renameRetryFor = old })
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	release := holdWithoutShareDelete(t, path)
	seen := retries(t, nil)
	err := Write(path, []byte("new"))
	if err == nil || !heldOpen(err) {
		t.Fatalf("Write = %v, want the sharing violation (or access denied) of the held target", err)
	}
	if len(*seen) < 2 {
		t.Errorf("%d attempts retried before giving up, want several", len(*seen))
	}
	release()
	if got := readFile(t, path); got != "old" {
		t.Errorf("content %q after the failed write, want old", got)
	}
	noTempSiblings(t, dir)
}

// Only a held file is waited for: a move that cannot succeed fails at once.
func TestRenameDoesNotRetryOtherErrors(t *testing.T) {
	dir := t.TempDir()
	seen := retries(t, nil)
	err := rename(filepath.Join(dir, "missing"), filepath.Join(dir, "target"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("rename of a missing file = %v, want not exist", err)
	}
	if len(*seen) != 0 {
		t.Errorf("retried %v", *seen)
	}
}
