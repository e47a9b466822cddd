package proc

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
	"sync"
	"time"

	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxBinaryBytes bounds a plugin binary the agent will hash and run. Go plugins are
// tens of megabytes; a gigabyte is not a plugin, and hashing it would stall the start.
const maxBinaryBytes = trust.MaxBinaryBytes

// RefusedError says a plugin binary was refused before it ever ran.
type RefusedError struct {
	Path   string
	Reason string
}

// Error says what happened.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("plugin binary %s refused: %s", e.Path, e.Reason)
}

// binary is a plugin binary to verify: its name, where it is, and its SHA-256 from the
// catalog.
type binary struct {
	Name     string
	Path     string
	Checksum []byte
	// vouched says a verification record stands for the hash: the bytes are copied
	// without it (materialize returns no sum).
	vouched bool
	// copied, when set, is called with the binary's descriptor once all its bytes are
	// copied, before anything closes it: the file's identity is read again there.
	copied func(*os.File)
}

// Image is a plugin binary that has been verified and can be run without the check and
// the run ever seeing different bytes: the bytes are read once through one descriptor,
// hashed as they are written into a sealed memory file (Linux) or a private copy
// (elsewhere), and that is what runs. A later write to the path, or a rename over it,
// changes nothing. See docs/agent.md.
type Image struct {
	// execPath is what to execute: /proc/self/fd/N of the memory file, or the
	// private copy.
	execPath string
	// fd is the memory file (Linux) or the verified descriptor, kept open until the
	// child has started.
	fd *os.File
	// tmpDir holds the private copy; removed once the child has exited.
	tmpDir string
	// kept, when set, is the verified image this start runs from, which the
	// launcher's ImageCache keeps for later starts; execPath is kept's, fd and tmpDir
	// are unset, and release gives this start's hold on it back.
	kept     *keptImage
	released sync.Once
}

// ExecPath is what to execute: the sealed memory file or the private copy.
func (img *Image) ExecPath() string { return img.execPath }

// trustedBinary opens b without following a link and checks on the open descriptor
// that it is a regular file owned by root or the agent's user, writable by nobody
// else, within the size bound.
func trustedBinary(b binary) (*os.File, error) {
	refuse := func(reason string) error { return &RefusedError{Path: b.Path, Reason: reason} }
	f, fi, err := safefile.Open(b.Path)
	if err != nil {
		return nil, refuse(err.Error())
	}
	if err := safefile.TrustedFile(f, fi, false); err != nil {
		f.Close()
		return nil, refuse(err.Error())
	}
	if fi.Size() > maxBinaryBytes {
		f.Close()
		return nil, refuse(fmt.Sprintf("%d bytes, over the %d-byte limit for a plugin", fi.Size(), maxBinaryBytes))
	}
	return f, nil
}

// verifyImage hashes the open, trusted binary f into its image and compares with the
// catalog's checksum; it takes f.
func verifyImage(f *os.File, b binary) (*Image, error) {
	refuse := func(reason string) error { return &RefusedError{Path: b.Path, Reason: reason} }
	img, sum, err := materialize(f, b)
	if err != nil {
		f.Close()
		return nil, err
	}
	if !bytes.Equal(sum, b.Checksum) {
		img.Release()
		return nil, refuse(fmt.Sprintf("SHA-256 %s does not match %s (%s); if you trust this binary, run `yuzu-agent plugins add %s`",
			hex.EncodeToString(sum), trust.FileName, hex.EncodeToString(b.Checksum), b.Path))
	}
	return img, nil
}

// copyChunk is how much of a binary hashCopy reads at a time: small enough that the
// buffer stays in the core's cache while it is hashed and then written, large enough
// that the system calls stay few (50 for a 13 MB plugin).
const copyChunk = 256 << 10

// hashCopy hashes what is left of f (at most maxBinaryBytes) into h (when not nil),
// writing the same bytes to w when it is not nil: what w got is exactly what was hashed. Each chunk is
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
			if total += int64(n); total > maxBinaryBytes {
				return errOverLimit
			}
			if h != nil {
				h.Write(buf[:n])
			}
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

// sumOf is h's sum, nil without a hash (a vouched copy).
func sumOf(h hash.Hash) []byte {
	if h == nil {
		return nil
	}
	return h.Sum(nil)
}

// started is called once the child runs: the descriptor is no longer needed.
func (img *Image) started() {
	if img.fd != nil {
		img.fd.Close()
		img.fd = nil
	}
}

// Release frees what the image holds; call it once the child has exited (or never
// started). Later calls do nothing.
func (img *Image) Release() {
	img.started()
	if img.tmpDir != "" {
		_ = os.RemoveAll(img.tmpDir)
	}
	if img.kept != nil {
		img.released.Do(img.kept.unref)
	}
}

// ImageCache keeps each plugin's verified, sealed image for the starts after the
// first: the binary is read, hashed and copied once, not at every start (cold exec,
// the first command after an idle stop, a restart after a crash). A start uses the
// kept image only while the binary at the path is the file that was verified (same
// device, inode, size, modification and change times, all read from the descriptor
// the start opens) and the catalog names the same checksum; anything else verifies
// afresh, and a refusal forgets the kept image. Whatever happens to the file after it
// was verified, what runs is the sealed copy of the bytes that were hashed, never the
// file: a change the identity misses (one within the same clock tick as the
// verification) can only make a start run the verified bytes once more. The trust of
// the file (owner, mode, every parent) is checked at every start, as before.
//
// What it costs: the sealed memory file of every plugin started since the agent
// began stays in memory (shared memory, not the agent's RSS), the size of the binary
// each (about 13 MB for a shipped plugin). While a child runs it costs nothing more:
// its executable pages are those same pages. Only Linux keeps images (the memory
// binary); the private copies of the other systems are made afresh at every start.
type ImageCache struct {
	// RecordDir, when set, keeps a verification record per plugin (record_unix.go):
	// a start that finds the binary unchanged since a record was written copies it
	// without hashing it. "" keeps none.
	RecordDir string

	mu      sync.Mutex
	m       map[string]*keptImage // by the binary's path
	writing sync.WaitGroup        // records being written
	freeing sync.WaitGroup        // memory files being closed (drop)
}

// keptImage is a verified sealed image and the identity of the file it was read from.
type keptImage struct {
	cache    *ImageCache
	execPath string
	fd       *os.File
	sum      []byte // the catalog's checksum it matched
	id       fileID
	refs     int // the cache's hold and one per start; under cache.mu
}

// unref gives back one hold; the last closes the memory file.
func (k *keptImage) unref() {
	k.cache.mu.Lock()
	defer k.cache.mu.Unlock()
	k.drop()
}

// drop gives back one hold, cache.mu held; the last closes the memory file. The
// close frees the file's pages, 3 ms for a 19 MB plugin, which nothing waits for but
// the cache's Close: it runs in the background, beside whatever the caller does next
// (the removal of the child's box, when the child that held it has just exited).
func (k *keptImage) drop() {
	k.refs--
	if k.refs == 0 {
		c := k.cache
		c.freeing.Add(1)
		go func() {
			defer c.freeing.Done()
			k.fd.Close()
		}()
	}
}

// hold returns a start's image of k; cache.mu is held.
func (k *keptImage) hold() *Image {
	k.refs++
	return &Image{execPath: k.execPath, kept: k}
}

// Open returns the image to start the plugin name's binary at path from, which the
// catalog says has the SHA-256 checksum: the kept one when the binary is still the
// file that was verified, else the binary verified afresh (trustedBinary,
// verifyImage), and kept when it can be. Every refusal is a *RefusedError.
func (c *ImageCache) Open(name, path string, checksum []byte) (*Image, error) {
	return c.open(binary{Name: name, Path: path, Checksum: checksum})
}

func (c *ImageCache) open(b binary) (*Image, error) {
	f, err := trustedBinary(b)
	if err != nil {
		return nil, err
	}
	id, ok := identify(f)
	if ok {
		c.mu.Lock()
		if k := c.m[b.Path]; k != nil && k.id == id && bytes.Equal(k.sum, b.Checksum) {
			img := k.hold()
			c.mu.Unlock()
			f.Close()
			return img, nil
		}
		c.mu.Unlock()
	}
	var img *Image
	if ok && vouched(c.RecordDir, b, id) && noWriters(f) {
		if img, err = copyVouched(f, b, id); err != nil {
			return nil, err
		}
		if img == nil {
			// The file changed while it was copied: verified afresh.
			if f, err = trustedBinary(b); err != nil {
				return nil, err
			}
			id, ok = identify(f)
		}
	}
	if img == nil {
		if img, err = c.verify(f, b, id, ok); err != nil {
			img = nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[b.Path]; old != nil {
		delete(c.m, b.Path)
		old.drop()
	}
	if err != nil || !ok || img.tmpDir != "" || img.fd == nil {
		return img, err
	}
	if c.m == nil {
		c.m = map[string]*keptImage{}
	}
	k := &keptImage{cache: c, execPath: img.execPath, fd: img.fd, sum: bytes.Clone(b.Checksum), id: id, refs: 1}
	c.m[b.Path] = k
	return k.hold(), nil
}

// Close forgets every kept image; starts that hold one keep it until they give it back.
// It returns once the records being written are written.
func (c *ImageCache) Close() {
	c.Forget()
	c.writing.Wait()
	c.freeing.Wait()
}

// Forget gives back the cache's hold on every kept image: each is freed once the
// starts that hold it have given theirs back (their children have exited). The
// supervisor's Close forgets first and then stops the children, so that a child's
// exit frees its image at once, beside the rest of the stop, not after it.
func (c *ImageCache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, k := range c.m {
		delete(c.m, p)
		k.drop()
	}
}

// verify hashes the open, trusted binary f into its image (verifyImage) and, when the
// file's identity id is known (ok), nobody had it open for writing, it did not change
// during the hash and it had last changed recordMargin before, records the
// verification in the background (Close waits for it). It takes f.
func (c *ImageCache) verify(f *os.File, b binary, id fileID, ok bool) (*Image, error) {
	record := ok && c.RecordDir != "" && noWriters(f)
	began := time.Now()
	var after fileID
	var afterOK bool
	b.copied = func(f *os.File) { after, afterOK = identify(f) }
	img, err := verifyImage(f, b)
	if err == nil && record && afterOK && after == id && id.changedLongBefore(began) {
		c.writing.Add(1)
		go func() {
			defer c.writing.Done()
			// A record that cannot be written only costs the next start its hash.
			_ = writeRecord(c.RecordDir, b, id)
		}()
	}
	return img, err
}

// copyVouched copies the open, trusted binary f, whose verification record vouches for
// its identity id, into its image without hashing it, and reads the identity again
// once every byte is copied: a file that changed meanwhile gives nil and no error,
// and the start verifies it afresh. It takes f.
func copyVouched(f *os.File, b binary, id fileID) (*Image, error) {
	var after fileID
	var afterOK bool
	b.vouched = true
	b.copied = func(f *os.File) { after, afterOK = identify(f) }
	img, _, err := materialize(f, b)
	if err != nil {
		f.Close()
		return nil, err
	}
	if !afterOK || after != id {
		img.Release()
		return nil, nil
	}
	return img, nil
}

// copyImage writes the verified bytes of f into a private directory only the agent's
// user can enter, and returns the copy as the image to run. It is how systems without
// a way to execute a descriptor run exactly the bytes that were checked.
func copyImage(f *os.File, b binary) (*Image, []byte, error) {
	dir, err := os.MkdirTemp("", "yuzu-plugin-")
	if err != nil {
		return nil, nil, fmt.Errorf("plugin %s: private copy: %w", b.Name, err)
	}
	img := &Image{tmpDir: dir, fd: f}
	if err := restrictDir(dir); err != nil {
		img.Release()
		return nil, nil, fmt.Errorf("plugin %s: private copy: %w", b.Name, err)
	}
	name := filepath.Join(dir, filepath.Base(b.Path))
	out, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		img.Release()
		return nil, nil, fmt.Errorf("plugin %s: private copy: %w", b.Name, err)
	}
	var h hash.Hash
	if !b.vouched {
		h = sha256.New()
	}
	err = hashCopy(h, out, f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		img.Release()
		return nil, nil, &RefusedError{Path: b.Path, Reason: "read: " + err.Error()}
	}
	if b.copied != nil {
		b.copied(f)
	}
	img.execPath = name
	return img, sumOf(h), nil
}
