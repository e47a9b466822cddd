package proc

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// withRecordMargin sets recordMargin for one test: files the tests write are seconds
// old at most.
func withRecordMargin(t *testing.T, d time.Duration) {
	old := recordMargin
	recordMargin = d
	t.Cleanup(func() { recordMargin = old })
}

// recordDir is a fresh record directory in a fresh data dir.
func recordDir(t *testing.T) string {
	return filepath.Join(t.TempDir(), "verified")
}

// coldOpen opens b as a new agent process would: an empty cache keeping records in
// dir. It releases what it opened and waits for the records being written.
func coldOpen(t *testing.T, dir string, b binary) error {
	t.Helper()
	c := ImageCache{RecordDir: dir}
	img, err := c.open(b)
	if err == nil {
		img.Release()
	}
	c.Close()
	return err
}

var honest = bytes.Repeat([]byte("yuzu plugin bytes "), 100_000)

// forged writes a binary whose bytes are not the catalog's and a record, in every
// way valid, saying they are: only a record that is believed lets it start.
func forged(t *testing.T) (binary, string) {
	t.Helper()
	b := writeBinary(t, honest)
	evil := append([]byte("EVIL"), honest[4:]...)
	if err := os.WriteFile(b.Path, evil, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(b.Path)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := identify(f)
	f.Close()
	if !ok {
		t.Fatal("no identity")
	}
	dir := recordDir(t)
	if err := writeRecord(dir, b, id); err != nil {
		t.Fatal(err)
	}
	return b, dir
}

func wantRefused(t *testing.T, err error) {
	t.Helper()
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("start: %v, want a refusal (the binary verified afresh)", err)
	}
}

// A verification is recorded, and the next cold start of the unchanged binary copies
// it without hashing it: the record alone stands for the hash (here it lies, and is
// believed).
func TestRecordStandsForTheHash(t *testing.T) {
	withRecordMargin(t, 0)
	b := writeBinary(t, honest)
	dir := recordDir(t)
	if err := coldOpen(t, dir, b); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dir, b.Name))
	if err != nil {
		t.Fatalf("no record after a verification: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %04o, want 0600", fi.Mode().Perm())
	}
	if di, err := os.Lstat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("record dir: %v, %v; want mode 0700", di, err)
	}
	if err := coldOpen(t, dir, b); err != nil {
		t.Fatalf("a start of the unchanged binary: %v", err)
	}

	fb, fdir := forged(t)
	c := ImageCache{RecordDir: fdir}
	img, err := c.open(fb)
	if err != nil {
		t.Fatalf("a start the record vouches for: %v", err)
	}
	// What runs is the copy of what the start read, sealed.
	got, err := os.ReadFile(img.execPath)
	if err != nil || !bytes.HasPrefix(got, []byte("EVIL")) {
		t.Fatalf("the image: %v", err)
	}
	img.Release()
	c.Close()
}

// writeInPlace overwrites a few bytes of the file at path where it is.
func writeInPlace(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("EVIL"), 100); err != nil {
		t.Fatal(err)
	}
}

// Any change of the file, or of the catalog's checksum, makes the record vouch for
// nothing: the binary is verified afresh and refused when it is not the catalog's.
func TestRecordIgnoredWhenTheFileChanged(t *testing.T) {
	withRecordMargin(t, 0)
	for what, change := range map[string]func(t *testing.T, b *binary){
		"written in place": func(t *testing.T, b *binary) { writeInPlace(t, b.Path) },
		"written in place, times put back": func(t *testing.T, b *binary) {
			fi, err := os.Stat(b.Path)
			if err != nil {
				t.Fatal(err)
			}
			writeInPlace(t, b.Path)
			if err := os.Chtimes(b.Path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
		"replaced by a rename": func(t *testing.T, b *binary) {
			other := b.Path + ".new"
			if err := os.WriteFile(other, append([]byte("EVIL"), honest[4:]...), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, b.Path); err != nil {
				t.Fatal(err)
			}
		},
		"another checksum in the catalog": func(t *testing.T, b *binary) {
			sum := sha256.Sum256([]byte("another build"))
			b.Checksum = sum[:]
		},
	} {
		t.Run(what, func(t *testing.T) {
			b := writeBinary(t, honest)
			dir := recordDir(t)
			if err := coldOpen(t, dir, b); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, b.Name)); err != nil {
				t.Fatal(err)
			}
			// recordMargin is 0 here: the change must come a clock tick after the
			// file's last one, as the margin ensures outside the tests.
			time.Sleep(20 * time.Millisecond)
			change(t, &b)
			wantRefused(t, coldOpen(t, dir, b))
		})
	}
}

// A record that is not exactly what the agent writes, where it writes it, is not
// believed: the forged one of TestRecordStandsForTheHash, damaged or exposed in any
// way, leaves the binary verified afresh, and refused.
func TestRecordIgnoredWhenNotTrusted(t *testing.T) {
	withRecordMargin(t, 0)
	for what, spoil := range map[string]func(t *testing.T, dir, rec string){
		"corrupted": func(t *testing.T, dir, rec string) {
			data, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0x20
			if err := os.WriteFile(rec, data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"truncated": func(t *testing.T, dir, rec string) {
			fi, err := os.Stat(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(rec, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		},
		"trailing data": func(t *testing.T, dir, rec string) {
			f, err := os.OpenFile(rec, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"format":1}`)
			f.Close()
		},
		"a symbolic link": func(t *testing.T, dir, rec string) {
			moved := filepath.Join(dir, "elsewhere")
			if err := os.Rename(rec, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, rec); err != nil {
				t.Fatal(err)
			}
		},
		"hard-linked": func(t *testing.T, dir, rec string) {
			if err := os.Link(rec, filepath.Join(dir, "other")); err != nil {
				t.Fatal(err)
			}
		},
		"readable by others": func(t *testing.T, dir, rec string) {
			if err := os.Chmod(rec, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"writable by the group": func(t *testing.T, dir, rec string) {
			if err := os.Chmod(rec, 0o620); err != nil {
				t.Fatal(err)
			}
		},
		"not the agent's": func(t *testing.T, dir, rec string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the record away")
			}
			if err := os.Chown(rec, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
		"in a directory others may enter": func(t *testing.T, dir, rec string) {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		},
		"in a directory that is a link": func(t *testing.T, dir, rec string) {
			moved := dir + ".real"
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, dir); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(what, func(t *testing.T) {
			b, dir := forged(t)
			spoil(t, dir, filepath.Join(dir, b.Name))
			wantRefused(t, coldOpen(t, dir, b))
		})
	}
}

// startWithoutRecord starts b from a cold cache with records in dir and fails the
// test if that wrote a record for it (what names the file that must get none).
func startWithoutRecord(t *testing.T, dir string, b binary, what string) {
	t.Helper()
	if err := coldOpen(t, dir, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, b.Name)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a record for %s: %v", what, err)
	}
}

// No verification is recorded for a file that changed within recordMargin of its hash
// (a later write in the same clock tick could keep its change time) or that someone
// has open for writing (a shared writable mapping changes bytes without moving any
// time); and a record is not believed while someone has the file open for writing.
func TestRecordNotWrittenOrUsedWhenUnsafe(t *testing.T) {
	t.Run("changed lately", func(t *testing.T) {
		withRecordMargin(t, time.Hour)
		b := writeBinary(t, honest)
		dir := recordDir(t)
		startWithoutRecord(t, dir, b, "a file changed a moment ago")
	})
	t.Run("open for writing", func(t *testing.T) {
		withRecordMargin(t, 0)
		b := writeBinary(t, honest)
		w, err := os.OpenFile(b.Path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		dir := recordDir(t)
		startWithoutRecord(t, dir, b, "a file open for writing")
	})
	t.Run("believed only without writers", func(t *testing.T) {
		withRecordMargin(t, 0)
		b, dir := forged(t)
		w, err := os.OpenFile(b.Path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		wantRefused(t, coldOpen(t, dir, b))
	})
}

// A file whose identity is not the record's once its bytes are copied (it changed
// during the copy) gives no image: the start verifies it afresh.
func TestVouchedCopyChecksTheIdentityAfter(t *testing.T) {
	b := writeBinary(t, honest)
	f, err := trustedBinary(b)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := identify(f)
	id.ctimeNsec++ // as if a write had moved it during the copy
	img, err := copyVouched(f, b, id)
	if err != nil || img != nil {
		t.Fatalf("copy of a file that changed: %v, %v; want nothing", img, err)
	}
}
