package proc

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// writeBinary puts content at dir/yuzu-plugin-x (mode 0755) and returns it as a
// file whose checksum matches.
func writeBinary(t testing.TB, content []byte) binary {
	t.Helper()
	p := filepath.Join(t.TempDir(), "yuzu-plugin-x")
	if err := os.WriteFile(p, content, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	return binary{Name: "x", Path: p, Checksum: sum[:]}
}

// The image runs from a sealed memory file holding exactly the hashed bytes: writing
// the file on disk afterwards changes nothing, and the memory file itself refuses
// every write, growth, shrink and unsealing.
func TestImageIsSealedCopy(t *testing.T) {
	content := bytes.Repeat([]byte("yuzu plugin bytes "), 100_000)
	b := writeBinary(t, content)
	img, err := openImage(b)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Release()
	if err := os.WriteFile(b.Path, []byte("other bytes"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(img.execPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, content) {
		t.Fatalf("the image holds %d bytes, not the %d that were hashed", len(got), len(content))
	}
	fd := int(img.fd.Fd())
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	if seals&sealedSeals != sealedSeals {
		t.Fatalf("seals %#x, want %#x", seals, sealedSeals)
	}
	if _, err := unix.Pwrite(fd, []byte("x"), 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("a write to the sealed copy: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 1); !errors.Is(err, unix.EPERM) {
		t.Errorf("shrinking the sealed copy: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("changing the seals: %v, want EPERM", err)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("the memory file is not close-on-exec (%#x, %v): children would inherit it", fl, err)
	}
}

// A checksum that does not match the bytes read refuses the binary.
func TestImageRefusesOtherBytes(t *testing.T) {
	b := writeBinary(t, []byte("listed bytes"))
	if err := os.WriteFile(b.Path, []byte("other bytes!"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := openImage(b)
	var refused *RefusedError
	if !errors.As(err, &refused) {
		if img != nil {
			img.Release()
		}
		t.Fatalf("openImage of changed bytes: %v, want a refusal", err)
	}
}

// BenchmarkImage compares what a start pays to verify a plugin-sized binary (this test
// binary): hashing it alone (what executing its own descriptor cost) and hashing it
// into a sealed memory file (what runs now), in turn within each iteration so that a
// busy machine weighs on both alike. It reports each as ms/hash and ms/sealed.
func BenchmarkImage(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	content, err := os.ReadFile(self)
	if err != nil {
		b.Fatal(err)
	}
	bin := writeBinary(b, content)
	var hashOnly, sealed time.Duration
	for b.Loop() {
		start := time.Now()
		f, err := os.Open(bin.Path)
		if err != nil {
			b.Fatal(err)
		}
		if err := hashCopy(sha256.New(), nil, f); err != nil {
			b.Fatal(err)
		}
		f.Close()
		mid := time.Now()
		img, err := openImage(bin)
		if err != nil {
			b.Fatal(err)
		}
		img.Release()
		hashOnly += mid.Sub(start)
		sealed += time.Since(mid)
	}
	b.ReportMetric(float64(hashOnly.Milliseconds())/float64(b.N), "ms/hash")
	b.ReportMetric(float64(sealed.Milliseconds())/float64(b.N), "ms/sealed")
}

// The launcher's cache verifies a binary once and hands later starts the same sealed
// image while the file and the catalog's checksum stay what they were; a file whose
// bytes changed after the first start is verified afresh, and refused, whatever way
// it changed, and the image kept for it is forgotten.
func TestImageCacheReverifiesAChangedFile(t *testing.T) {
	content := bytes.Repeat([]byte("yuzu plugin bytes "), 100_000)
	for what, change := range map[string]func(t *testing.T, path string){
		"written in place": func(t *testing.T, path string) { writeInPlace(t, path) },
		"written in place, times put back": func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // past the file system's clock tick
			writeInPlace(t, path)
			if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		},
		"replaced by a rename": func(t *testing.T, path string) {
			other := path + ".new"
			if err := os.WriteFile(other, append([]byte("EVIL"), content[4:]...), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(what, func(t *testing.T) {
			b := writeBinary(t, content)
			var c ImageCache
			first, err := c.open(b)
			if err != nil {
				t.Fatal(err)
			}
			second, err := c.open(b)
			if err != nil {
				t.Fatal(err)
			}
			if first.kept == nil || second.kept != first.kept || second.execPath != first.execPath {
				t.Fatal("the second start did not get the kept image")
			}
			first.Release()
			first.Release() // a second release of the same start gives nothing back twice
			change(t, b.Path)
			img, err := c.open(b)
			var refused *RefusedError
			if !errors.As(err, &refused) {
				if img != nil {
					img.Release()
				}
				t.Fatalf("a start after the file changed: %v, want a refusal", err)
			}
			if len(c.m) != 0 {
				t.Error("the refused binary's image is still kept")
			}
			// The start that still holds the image runs the verified bytes.
			got, err := os.ReadFile(second.execPath)
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("the held image: %d bytes, %v; want the %d verified ones", len(got), err, len(content))
			}
			second.Release()
			if second.kept.refs != 0 {
				t.Errorf("%d holds left once every start gave its own back", second.kept.refs)
			}
		})
	}
	// A new catalog checksum (an upgrade) verifies afresh too.
	b := writeBinary(t, content)
	var c ImageCache
	img, err := c.open(b)
	if err != nil {
		t.Fatal(err)
	}
	img.Release()
	b.Checksum = bytes.Repeat([]byte{1}, 32)
	if img, err := c.open(b); err == nil {
		img.Release()
		t.Fatal("a checksum the kept image was not verified against was taken")
	}
	c.Close()
}
