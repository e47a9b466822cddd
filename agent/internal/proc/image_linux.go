package proc

import (
	"crypto/sha256"
	"errors"
	"fmt"
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
	h := sha256.New()
	if err := hashCopy(h, mem, f); err != nil {
		mem.Close()
		return nil, nil, &RefusedError{Path: b.Path, Reason: "read: " + err.Error()}
	}
	if _, err := unix.FcntlInt(uintptr(mfd), unix.F_ADD_SEALS, sealedSeals); err != nil {
		mem.Close()
		return nil, nil, fmt.Errorf("plugin %s: sealing its copy: %w", b.Name, err)
	}
	f.Close() // the sealed memory file holds the bytes now
	return &Image{execPath: fdPath, fd: mem}, h.Sum(nil), nil
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
