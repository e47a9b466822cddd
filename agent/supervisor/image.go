package supervisor

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// MaxBinaryBytes bounds a plugin binary the agent will hash and run. Go plugins are
// tens of megabytes; a gigabyte is not a plugin, and hashing it would stall the start.
const MaxBinaryBytes = trust.MaxBinaryBytes

// image is a plugin binary that has been verified and can be run without the check and
// the run ever seeing different bytes: the bytes are read once through one descriptor,
// hashed as they are written into a sealed memory file (Linux) or a private copy
// (elsewhere), and that is what runs. A later write to the path, or a rename over it,
// changes nothing. See docs/agent.md.
type image struct {
	// execPath is what to execute: /proc/self/fd/N of the memory file, or the
	// private copy.
	execPath string
	// fd is the memory file (Linux) or the verified descriptor, kept open until the
	// child has started.
	fd *os.File
	// tmpDir holds the private copy; removed once the child has exited.
	tmpDir string
}

// openImage opens b without following a link, checks on the open descriptor that it
// is a regular file owned by root or the agent's user and writable by nobody else,
// hashes it and compares with the catalog's checksum. Every refusal is a
// *RefusedError naming the file.
func openImage(b Binary) (*image, error) {
	refuse := func(reason string) error { return &RefusedError{Path: b.Path, Reason: reason} }
	f, fi, err := safefile.Open(b.Path)
	if err != nil {
		return nil, refuse(err.Error())
	}
	if err := safefile.TrustedFile(f, fi, false); err != nil {
		f.Close()
		return nil, refuse(err.Error())
	}
	if fi.Size() > MaxBinaryBytes {
		f.Close()
		return nil, refuse(fmt.Sprintf("%d bytes, over the %d-byte limit for a plugin", fi.Size(), MaxBinaryBytes))
	}
	img, sum, err := materialize(f, b)
	if err != nil {
		f.Close()
		return nil, err
	}
	if !bytes.Equal(sum, b.Checksum) {
		img.release()
		return nil, refuse(fmt.Sprintf("SHA-256 %s does not match %s (%s); if you trust this binary, run `yuzu-agent plugins add %s`",
			hex.EncodeToString(sum), trust.FileName, hex.EncodeToString(b.Checksum), b.Path))
	}
	return img, nil
}

// copyChunk is how much of a binary hashCopy reads at a time: small enough that the
// buffer stays in the core's cache while it is hashed and then written, large enough
// that the system calls stay few (50 for a 13 MB plugin).
const copyChunk = 256 << 10

// hashCopy hashes what is left of f (at most MaxBinaryBytes) into h, writing the same
// bytes to w when it is not nil: what w got is exactly what was hashed. Each chunk is
// read once, hashed, and written from the same buffer, in one goroutine. Handing the
// chunks to a writer goroutine (as this did first) made a start dearer, not cheaper:
// on a loaded machine every hand-off waited for the other thread to be scheduled,
// twice a chunk (BenchmarkImage).
func hashCopy(h hash.Hash, w io.Writer, f *os.File) error {
	buf := make([]byte, copyChunk)
	var total int64
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			if total += int64(n); total > MaxBinaryBytes {
				return errOverLimit
			}
			h.Write(buf[:n])
			if w != nil {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return werr
				}
			}
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return nil
		case err != nil:
			return err
		}
	}
}

var errOverLimit = errors.New("grew over the size limit while being read")

// started is called once the child runs: the descriptor is no longer needed.
func (img *image) started() {
	if img.fd != nil {
		img.fd.Close()
		img.fd = nil
	}
}

// release frees what the image holds; call it once the child has exited (or never
// started).
func (img *image) release() {
	img.started()
	if img.tmpDir != "" {
		_ = os.RemoveAll(img.tmpDir)
	}
}

// copyImage writes the verified bytes of f into a private directory only the agent's
// user can enter, and returns the copy as the image to run. It is how systems without
// a way to execute a descriptor run exactly the bytes that were checked.
func copyImage(f *os.File, b Binary) (*image, []byte, error) {
	dir, err := os.MkdirTemp("", "yuzu-plugin-")
	if err != nil {
		return nil, nil, fmt.Errorf("plugin %s: private copy: %w", b.Name, err)
	}
	img := &image{tmpDir: dir, fd: f}
	if err := restrictDir(dir); err != nil {
		img.release()
		return nil, nil, fmt.Errorf("plugin %s: private copy: %w", b.Name, err)
	}
	name := filepath.Join(dir, filepath.Base(b.Path))
	out, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		img.release()
		return nil, nil, fmt.Errorf("plugin %s: private copy: %w", b.Name, err)
	}
	h := sha256.New()
	err = hashCopy(h, out, f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		img.release()
		return nil, nil, &RefusedError{Path: b.Path, Reason: "read: " + err.Error()}
	}
	img.execPath = name
	return img, h.Sum(nil), nil
}
