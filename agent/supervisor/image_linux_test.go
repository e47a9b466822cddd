package supervisor

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
// Binary whose checksum matches.
func writeBinary(t testing.TB, content []byte) Binary {
	t.Helper()
	p := filepath.Join(t.TempDir(), "yuzu-plugin-x")
	if err := os.WriteFile(p, content, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	return Binary{Name: "x", Path: p, Checksum: sum[:]}
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
	defer img.release()
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
			img.release()
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
		img.release()
		hashOnly += mid.Sub(start)
		sealed += time.Since(mid)
	}
	b.ReportMetric(float64(hashOnly.Milliseconds())/float64(b.N), "ms/hash")
	b.ReportMetric(float64(sealed.Milliseconds())/float64(b.N), "ms/sealed")
}
