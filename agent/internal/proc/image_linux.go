package proc

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// sealedSeals make a memfd immutable: no write, no growing, no shrinking, and no
// taking the seals off again.
const sealedSeals = unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL

// materialize writes the open binary into a memory file while hashing it (one read of
// each byte, see hashCopy), seals the memory file, and the agent executes it
// (/proc/self/fd/N): the bytes hashed are the bytes that run, and nobody can change
// them afterwards, whatever happens to the file on disk (an in-place write, a `cp`
// over it, a rename). Executing the binary's own descriptor would not do: its pages
// can change between the hash and the exec. Without memfd_create (kernels before
// 3.17, a seccomp filter) or without /proc, it falls back to the private copy of the
// other systems. See docs/agent.md.
func materialize(f *os.File, b binary) (*Image, []byte, error) {
	mfd, err := newSealableMemfd("yuzu-plugin-" + b.Name)
	if err != nil {
		return copyImage(f, b)
	}
	mem := os.NewFile(uintptr(mfd), "memfd:yuzu-plugin-"+b.Name)
	fdPath := "/proc/self/fd/" + strconv.Itoa(mfd)
	if _, err := os.Stat(fdPath); err != nil {
		mem.Close()
		return copyImage(f, b)
	}
	var h hash.Hash
	if b.vouched {
		// No hash: the kernel copies the bytes, page cache to memory file, without
		// the two passes through a buffer that hashing needs.
		err = sendAll(mem, f)
	} else {
		h = sha256.New()
		err = hashCopy(h, mem, f)
	}
	if err != nil {
		mem.Close()
		return nil, nil, &RefusedError{Path: b.Path, Reason: "read: " + err.Error()}
	}
	if b.copied != nil {
		b.copied(f)
	}
	if _, err := unix.FcntlInt(uintptr(mfd), unix.F_ADD_SEALS, sealedSeals); err != nil {
		mem.Close()
		return nil, nil, fmt.Errorf("plugin %s: sealing its copy: %w", b.Name, err)
	}
	f.Close() // the sealed memory file holds the bytes now
	return &Image{execPath: fdPath, fd: mem}, sumOf(h), nil
}

// sendAll copies what is left of f (at most maxBinaryBytes) to the memory file mem in
// the kernel (sendfile), or through a buffer where sendfile cannot.
func sendAll(mem, f *os.File) error {
	var total int64
	for {
		n, err := unix.Sendfile(int(mem.Fd()), int(f.Fd()), nil, copyChunk*16)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if total == 0 && (err == unix.EINVAL || err == unix.ENOSYS) {
				return hashCopy(nil, mem, f)
			}
			return err
		}
		if n == 0 {
			return nil
		}
		if total += int64(n); total > maxBinaryBytes {
			return errOverLimit
		}
	}
}

// noWriters reports whether nobody has the open file f open for writing (a shared
// writable mapping included): the kernel grants a read lease only then. The lease is
// given back at once. Without the right to take one (an agent that is not root, for a
// file it does not own) or leases at all, it cannot tell and says false.
func noWriters(f *os.File) bool {
	fd := f.Fd()
	if _, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK); err != nil {
		return false
	}
	_, _ = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
	return true
}

// newSealableMemfd makes a close-on-exec memory file that can be sealed and executed.
// Kernels since 6.3 take MFD_EXEC (and with vm.memfd_noexec may refuse executing a
// memfd made without it); older ones refuse the unknown flag, so it is tried first
// and dropped on EINVAL.
func newSealableMemfd(name string) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	return fd, err
}

// restrictDir is a no-op: os.MkdirTemp already makes the directory 0700.
func restrictDir(string) error { return nil }
