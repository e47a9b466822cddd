// Package pathcheck turns the path a caller names into the canonical path the
// filesystem actions work on, enforces the caller's optional base directory, and opens
// validated paths without following symbolic links.
//
// Validation answers "which file does this name mean now, and is it inside base_dir":
// it follows symbolic links, as the upstream agent does, and returns the path with
// every link resolved. The agent runs as root, so between that answer and the moment
// a file is opened a local user who can write somewhere along the path could swap a
// component for a link. Open and OpenIn close that window: they walk the canonical path
// again without following any link, so a swap makes the open fail instead of reaching
// another file. docs/filesystem.md describes the rules for users.
package pathcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// MaxLen is the longest path or base directory accepted, in bytes (the definitions'
// maxLength).
const MaxLen = 4096

// Errors returned by this package, for errors.Is.
var (
	ErrEmpty        = errors.New("path is empty")
	ErrNUL          = errors.New("path contains a NUL byte")
	ErrTooLong      = fmt.Errorf("path is longer than %d bytes", MaxLen)
	ErrNotExist     = errors.New("path does not exist or cannot be resolved")
	ErrNoParent     = errors.New("path has no parent directory")
	ErrBaseDir      = errors.New("base directory does not exist or cannot be resolved")
	ErrOutside      = errors.New("path is outside the base directory")
	ErrSymlink      = errors.New("path contains a symbolic link")
	ErrNotCanonical = errors.New("path is not an absolute, clean path")
	ErrChanged      = errors.New("path changed while it was being opened")
)

// Validate returns the canonical form of raw: absolute, with every symbolic link
// resolved and no "." or ".." left. raw must exist, judged by following links, so a
// dangling link is refused. When baseDir is not empty it is canonicalised the same
// way (it must exist) and the result must be the base itself or lie below it; a
// sibling that merely shares the prefix, such as /x/logbackup for /x/log, is outside.
func Validate(raw, baseDir string) (string, error) {
	if err := checkInput(raw, baseDir); err != nil {
		return "", err
	}
	if _, err := os.Stat(raw); err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	canon, err := canonical(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	if err := inside(canon, baseDir); err != nil {
		return "", err
	}
	return canon, nil
}

// ValidateOrParent is Validate for a path that may not exist yet. When raw exists it
// behaves exactly like Validate. Otherwise its lexical parent must exist (a bare name
// such as "foo.txt" has none and is refused), the canonical parent must pass the
// base directory check, and raw itself is returned unchanged, as upstream reports it.
// To create the file, open ValidateNew's answer, not this string.
func ValidateOrParent(raw, baseDir string) (string, error) {
	if err := checkInput(raw, baseDir); err != nil {
		return "", err
	}
	if _, err := os.Stat(raw); err == nil {
		return Validate(raw, baseDir)
	}
	if _, err := validParent(raw, baseDir); err != nil {
		return "", err
	}
	return raw, nil
}

// ValidateNew returns the canonical path at which a file named by raw is to be
// created: the canonical form of raw's parent directory, checked against baseDir,
// joined with raw's last element. The last element must be a plain name (not empty,
// "." or ".."). The file itself is not looked at; create it with Open or OpenIn and
// O_CREATE|O_EXCL, which refuses a link planted at that name.
func ValidateNew(raw, baseDir string) (string, error) {
	if err := checkInput(raw, baseDir); err != nil {
		return "", err
	}
	parent, err := validParent(raw, baseDir)
	if err != nil {
		return "", err
	}
	name := strings.TrimLeftFunc(raw[len(lexicalParent(raw)):], isSepRune)
	if name == "" || name == "." || name == ".." || strings.IndexFunc(name, isSepRune) >= 0 {
		return "", fmt.Errorf("%w: %q does not end in a file name", ErrNotCanonical, raw)
	}
	return filepath.Join(parent, name), nil
}

func validParent(raw, baseDir string) (string, error) {
	parent := lexicalParent(raw)
	if parent == "" {
		return "", ErrNoParent
	}
	canon, err := canonical(parent)
	if err != nil {
		return "", fmt.Errorf("%w: parent: %w", ErrNotExist, err)
	}
	if err := inside(canon, baseDir); err != nil {
		return "", err
	}
	return canon, nil
}

// Contains reports whether p is base or lies below it. Both must be canonical. The
// test is on whole path elements: p must equal base or continue it with a separator,
// unless base is a root ("/", `C:\`), which contains every path on it.
func Contains(base, p string) bool {
	if base == "" || !strings.HasPrefix(p, base) {
		return false
	}
	if len(p) == len(base) || isSep(base[len(base)-1]) {
		return true
	}
	return isSep(p[len(base)])
}

// OpenIn opens path, a canonical path from Validate or ValidateNew, like Open, and
// also guarantees it is inside baseDir at the moment of opening: baseDir is
// canonicalised again, path must lie inside it, and where the system allows it the
// open is resolved from a descriptor of the base directory and cannot climb out of
// it. With an empty baseDir it is Open.
func OpenIn(baseDir, path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := checkCanonical(path); err != nil {
		return nil, err
	}
	if baseDir == "" {
		return openAt("", path, flag, perm)
	}
	if err := checkInput(baseDir, ""); err != nil {
		return nil, err
	}
	base, err := canonical(baseDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBaseDir, err)
	}
	if !Contains(base, path) {
		return nil, ErrOutside
	}
	return openAt(base, path, flag, perm)
}

// Open opens path, which must be absolute and clean (a canonical path from Validate
// or ValidateNew), without following a symbolic link in any component: a link
// anywhere on the way, the last element included, makes it fail with ErrSymlink.
// flag and perm are as for os.OpenFile; close-on-exec is always set.
//
// How this is enforced per system:
//   - Linux: openat2 with RESOLVE_NO_SYMLINKS (also refusing /proc magic links);
//     where openat2 is missing or blocked (kernels before 5.6, some seccomp
//     profiles) a walk from "/" that opens each directory with O_NOFOLLOW relative
//     to the previous one.
//   - macOS: open with O_NOFOLLOW_ANY.
//   - Windows: the last element is opened without following a reparse point, a
//     symbolic link or junction there is refused, and the path the system reports for
//     the open handle must equal path, which catches a link in an earlier element
//     after the fact (best effort: a subst drive or a volume mounted in a folder also
//     differs and is refused).
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	return OpenIn("", path, flag, perm)
}

// RealPath returns the path the operating system currently reports for the open
// file f (Linux /proc/self/fd, macOS F_GETPATH, Windows GetFinalPathNameByHandle).
// A file that was renamed since it was opened reports its new name.
func RealPath(f *os.File) (string, error) {
	return realPath(f)
}

// CheckInside returns nil when the open file f is baseDir or lies below it, judged by
// RealPath now, and ErrOutside when it does not. Use it after reading from a
// descriptor whose directory may have been moved meanwhile. An empty baseDir always
// passes.
func CheckInside(f *os.File, baseDir string) error {
	if baseDir == "" {
		return nil
	}
	if err := checkInput(baseDir, ""); err != nil {
		return err
	}
	base, err := canonical(baseDir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBaseDir, err)
	}
	p, err := realPath(f)
	if err != nil {
		return err
	}
	if !Contains(base, p) {
		return ErrOutside
	}
	return nil
}

func checkInput(raw, baseDir string) error {
	if raw == "" {
		return ErrEmpty
	}
	for _, s := range []string{raw, baseDir} {
		if strings.IndexByte(s, 0) >= 0 {
			return ErrNUL
		}
		if len(s) > MaxLen {
			return ErrTooLong
		}
	}
	return nil
}

func checkCanonical(path string) error {
	if err := checkInput(path, ""); err != nil {
		return err
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("%w: %q", ErrNotCanonical, path)
	}
	return nil
}

func inside(canon, baseDir string) error {
	if baseDir == "" {
		return nil
	}
	base, err := canonical(baseDir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBaseDir, err)
	}
	if !Contains(base, canon) {
		return ErrOutside
	}
	return nil
}

// canonical makes p absolute and resolves every symbolic link in it, element by
// element, so a ".." after a link climbs out of the link's target as the kernel does
// (filepath.Abs alone would first delete "link/.." as text). It fails when any
// element does not exist.
func canonical(p string) (string, error) {
	abs := p
	switch {
	case runtime.GOOS == "windows":
		// Windows itself removes ".." from a path as text before any link is
		// looked at, so the lexical form is the one the system opens.
		var err error
		if abs, err = filepath.Abs(p); err != nil {
			return "", err
		}
	case !filepath.IsAbs(p):
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		abs = wd + string(filepath.Separator) + p
	}
	return filepath.EvalSymlinks(abs)
}

// lexicalParent returns the parent of p as written, or "" when p is a bare name.
// Trailing separators count as an empty last element, so the parent of "a/b/" is
// "a/b", as C++ std::filesystem reads it.
func lexicalParent(p string) string {
	vol := filepath.VolumeName(p)
	rest := p[len(vol):]
	i := strings.LastIndexFunc(rest, isSepRune)
	if i < 0 {
		return vol // "" for a bare name; "C:" for "C:name"
	}
	dir := strings.TrimRightFunc(rest[:i], isSepRune)
	if dir == "" {
		dir = rest[:1] // the root separator itself
	}
	return vol + dir
}

func isSep(c byte) bool {
	return c == '/' || c == filepath.Separator
}

func isSepRune(r rune) bool {
	return r == '/' || r == filepath.Separator
}
