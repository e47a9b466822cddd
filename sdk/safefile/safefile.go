// Package safefile opens and reads files that someone else may control. The agent runs
// as root, and a local user who can write to a directory it reads from can put a
// symbolic link, a FIFO, a device or a huge file where a small regular file belongs;
// each would make a naive read leak another file, hang or run out of memory.
//
// Open never follows a symbolic link in the last component, never blocks on a FIFO,
// and checks on the open descriptor (not on a separate stat) that it holds a regular
// file; ReadFile adds a size bound. Owned and Trusted check who may have written a
// file or directory from its stat (owner and mode bits), which on Windows says
// nothing; TrustedFile and TrustedPath check the same on every system, reading the
// owner and DACL of the file itself on Windows.
package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrTooLarge is wrapped by ReadFile when a file is over its bound.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped when a path is not a regular file (a FIFO, a device, a
// socket, a directory or a symbolic link).
var ErrNotRegular = errors.New("not a regular file")

// Open opens path read-only for reading a regular file: without following a symbolic
// link at path itself, without blocking if it is a FIFO, and then checks with fstat that
// the open file is a regular file. The error names the path and says what was wrong.
// A missing file gives an error wrapping fs.ErrNotExist.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := openNoFollow(path)
	if err != nil {
		if isSymlinkErr(err) {
			return nil, nil, fmt.Errorf("%s is a symbolic link: %w", path, ErrNotRegular)
		}
		// Some kinds of file cannot even be opened (a socket answers ENXIO): say what
		// is there rather than pass the open's puzzling error on. The lstat only words
		// the refusal; the open has already failed.
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			return nil, nil, fmt.Errorf("%s is %s: %w", path, Describe(fi.Mode()), ErrNotRegular)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s: %w", path, Describe(fi.Mode()), ErrNotRegular)
	}
	return f, fi, nil
}

// ReadFile reads a whole regular file of at most limit bytes, opened as Open does.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, fi, limit)
}

// ReadTrusted is ReadFile for a file the agent believes: it must also be trusted
// (TrustedFile: owned by root or this process's user, writable by nobody else; on
// Windows read from its DACL), judged on the descriptor that is read. The error names
// path.
func ReadTrusted(path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := TrustedFile(f, fi, false); err != nil {
		return nil, fmt.Errorf("%s is %w", path, err)
	}
	return ReadAll(f, fi, limit)
}

// ReadAll reads what is left of an open file of at most limit bytes. fi is the file's
// stat (for the error message and the first size check); the read itself is bounded
// too, because the file can grow after the stat.
func ReadAll(f *os.File, fi fs.FileInfo, limit int64) ([]byte, error) {
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit: %w", f.Name(), fi.Size(), limit, ErrTooLarge)
	}
	// Sized from the stat, so a large file is read into one allocation; procfs and
	// the like report 0 and the buffer grows as the text arrives.
	var buf bytes.Buffer
	if n := fi.Size(); n > 0 {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	data := buf.Bytes()
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew over the %d-byte limit while being read: %w", f.Name(), limit, ErrTooLarge)
	}
	return data, nil
}

// TrustedDir refuses a directory that someone other than root or this process's user
// could change: dir itself, after symbolic links are resolved, and every directory
// above it up to the root must be owned by one of them and not writable by group or
// others (a sticky parent such as /tmp is allowed: others cannot rename or remove what
// is ours in it). Whoever can write to a directory or any parent can swap what the
// agent later reads or runs from it. The error starts with dir: "<dir> refused: ...",
// "<dir> is not a directory" or "<dir>: <lookup error>".
func TrustedDir(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if p == real && !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		if err := Trusted(fi, p != real); err != nil {
			if p == real {
				return fmt.Errorf("%s refused: %v", dir, err)
			}
			return fmt.Errorf("%s refused: its parent %s is %v", dir, p, err)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// Describe names the kind of file a mode stands for, for error messages: "a directory",
// "a symbolic link", "a named pipe (FIFO)", "a socket", "a device", "a regular file".
func Describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}
