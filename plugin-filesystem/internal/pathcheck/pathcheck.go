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
// another file.
//
// The base directory itself is resolved once per command by OpenBase, which refuses a
// base that a user other than root and the agent's user could redirect (it, or a
// directory or link on the way to it, is theirs or writable by them), and holds it
// open: every later open, stat and check of the command is made beneath that
// descriptor, so the base cannot change under the command even if its name does.
// docs/filesystem.md describes the rules for users.
package pathcheck

import (
	"errors"
	"fmt"
	"io/fs"
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
	ErrNotDir       = errors.New("path is not a directory")
	// ErrUntrusted is matched by every *UntrustedError.
	ErrUntrusted = errors.New("directory can be changed by users other than root and the agent's user")
)

// UntrustedError says why OpenBase or OpenDir refused a directory: Path, the
// directory itself, a directory on the way to it or a symbolic link there, can be
// changed by a user other than root and the agent's user, so that user could make the
// name lead anywhere. Its text is "<Path> <Reason>".
type UntrustedError struct {
	Path   string
	Reason string
}

func (e *UntrustedError) Error() string { return e.Path + " " + e.Reason }

// Is makes errors.Is(err, ErrUntrusted) hold.
func (e *UntrustedError) Is(target error) bool { return target == ErrUntrusted }

// Base is a base directory resolved and held open for the length of one command. A
// nil *Base stands for "no base directory": nothing is narrowed, and the functions
// taking one behave as upstream does without base_dir.
type Base struct {
	// path is the canonical path of the directory when it was opened.
	path string
	// dir is the directory itself: on Linux an O_PATH descriptor, on macOS a
	// read-only one, on Windows a handle opened without delete sharing (so the
	// directory cannot be renamed or removed while it is held).
	dir *os.File
}

// OpenBase resolves raw, the caller's base_dir, and holds the directory open. An
// empty raw is no base directory: the answer is nil, nil.
//
// raw is resolved one element at a time from the root, each directory opened without
// following a link relative to the previous one, and links read and resolved by
// hand (a ".." after a link climbs out of the link's target, as the system resolves
// it). On Linux and macOS every directory met on the way, and the base itself, must
// be owned by root or the agent's user and writable by nobody else, except that a
// directory on the way may be writable by all when it is sticky (such as /tmp) and
// what is met in it is theirs; a link is followed only where it lies in such a
// directory. Anything else is refused with an *UntrustedError: a user who can write
// there can point the name at any directory, /root included. Windows leaves access
// to the ACLs the installer sets and checks nothing of the kind.
//
// A base that does not exist or cannot be resolved is ErrBaseDir; one that is not a
// directory is ErrBaseDir wrapping ErrNotDir.
func OpenBase(raw string) (*Base, error) {
	if raw == "" {
		return nil, nil
	}
	if err := checkInput(raw); err != nil {
		return nil, err
	}
	b, err := openDir(raw, true)
	if err != nil && !errors.Is(err, ErrUntrusted) {
		return nil, fmt.Errorf("%w: %w", ErrBaseDir, err)
	}
	return b, err
}

// OpenDir resolves raw, a directory new entries are to be created in (create_temp),
// and holds it open, like OpenBase but asking less of the directories: any of them,
// the directory itself included, may belong to another user. Only links are judged:
// one is followed while every directory before it is trusted as OpenBase trusts
// them, and refused with an *UntrustedError once the name has passed through a
// directory another user can change, because its target would then be that user's
// choice. A directory that does not exist is ErrNotExist, something else than a
// directory ErrNotDir.
func OpenDir(raw string) (*Base, error) {
	if err := checkInput(raw); err != nil {
		return nil, err
	}
	return openDir(raw, false)
}

// Path returns the canonical path of the base directory, "" for no base.
func (b *Base) Path() string {
	if b == nil {
		return ""
	}
	return b.path
}

// File returns the open directory, nil for no base. It stays owned by b.
func (b *Base) File() *os.File {
	if b == nil {
		return nil
	}
	return b.dir
}

// Close lets go of the directory. It may be called on nil.
func (b *Base) Close() error {
	if b == nil || b.dir == nil {
		return nil
	}
	return b.dir.Close()
}

// Stat describes the canonical path path without following a link in any element,
// and with b set only beneath b's open directory: a link swapped in since the path
// was validated, or a path that leaves b, is refused instead of described. Nothing
// is opened for reading, so a FIFO or a device is looked at without effect.
func Stat(b *Base, path string) (fs.FileInfo, error) {
	if err := checkCanonical(path); err != nil {
		return nil, err
	}
	if b != nil && !Contains(b.path, path) {
		return nil, ErrOutside
	}
	return statAt(b, path)
}

// Validate returns the canonical form of raw: absolute, with every symbolic link
// resolved and no "." or ".." left. raw must exist, judged by following links, so a
// dangling link is refused. With a base b the result must be b's directory itself or
// lie below it (a sibling that merely shares the prefix, such as /x/logbackup for
// /x/log, is outside), and it is confirmed beneath b's open directory without
// following any link: resolving a name element by element can be fooled by a
// directory swapped for a link half-way, into a path that looks inside but is not.
func Validate(raw string, b *Base) (string, error) {
	if err := checkInput(raw); err != nil {
		return "", err
	}
	if _, err := os.Stat(raw); err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	canon, err := canonical(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	if err := confirm(canon, b); err != nil {
		return "", err
	}
	return canon, nil
}

// confirm checks that the canonical path canon is inside b (no base: anything is) and
// is there now, reached beneath b's directory without a link.
func confirm(canon string, b *Base) error {
	if b == nil {
		return nil
	}
	if !Contains(b.path, canon) {
		return ErrOutside
	}
	if _, err := statAt(b, canon); err != nil {
		return fmt.Errorf("%w: %w", ErrChanged, err)
	}
	return nil
}

// ValidateOrParent is Validate for a path that may not exist yet. When raw exists it
// behaves exactly like Validate. Otherwise its lexical parent must exist (a bare name
// such as "foo.txt" has none and is refused), the canonical parent must pass the
// base directory check, and raw itself is returned unchanged, as upstream reports it.
// To create the file, open ValidateNew's answer, not this string.
func ValidateOrParent(raw string, b *Base) (string, error) {
	if err := checkInput(raw); err != nil {
		return "", err
	}
	if _, err := os.Stat(raw); err == nil {
		return Validate(raw, b)
	}
	if _, err := validParent(raw, b); err != nil {
		return "", err
	}
	return raw, nil
}

// ValidateNew returns the canonical path at which a file named by raw is to be
// created: the canonical form of raw's parent directory, checked against b,
// joined with raw's last element. The last element must be a plain name (not empty,
// "." or ".."). The file itself is not looked at; create it with Open or OpenIn and
// O_CREATE|O_EXCL, which refuses a link planted at that name.
func ValidateNew(raw string, b *Base) (string, error) {
	if err := checkInput(raw); err != nil {
		return "", err
	}
	parent, err := validParent(raw, b)
	if err != nil {
		return "", err
	}
	name := strings.TrimLeftFunc(raw[len(lexicalParent(raw)):], isSepRune)
	if name == "" || name == "." || name == ".." || strings.IndexFunc(name, isSepRune) >= 0 {
		return "", fmt.Errorf("%w: %q does not end in a file name", ErrNotCanonical, raw)
	}
	return filepath.Join(parent, name), nil
}

func validParent(raw string, b *Base) (string, error) {
	parent := lexicalParent(raw)
	if parent == "" {
		return "", ErrNoParent
	}
	canon, err := canonical(parent)
	if err != nil {
		return "", fmt.Errorf("%w: parent: %w", ErrNotExist, err)
	}
	if err := confirm(canon, b); err != nil {
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
// also guarantees it is inside b at the moment of opening: path must lie inside b's
// canonical path, and the open is resolved from b's open directory and cannot climb
// out of it (on Windows, where no open is relative to a handle, the path the system
// reports for the new handle must lie inside). With a nil b it is Open.
func OpenIn(b *Base, path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := checkCanonical(path); err != nil {
		return nil, err
	}
	if b != nil && !Contains(b.path, path) {
		return nil, ErrOutside
	}
	return openAt(b, path, flag, perm)
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
	return OpenIn(nil, path, flag, perm)
}

// RealPath returns the path the operating system currently reports for the open
// file f (Linux /proc/self/fd, macOS F_GETPATH, Windows GetFinalPathNameByHandle).
// A file that was renamed since it was opened reports its new name.
func RealPath(f *os.File) (string, error) {
	return realPath(f)
}

// CheckInside returns nil when the open file f is b's directory or lies below it,
// judged by RealPath now against the path b was opened at, and ErrOutside when it
// does not. Use it after reading from a descriptor whose directory may have been
// moved meanwhile. A nil b always passes.
func CheckInside(f *os.File, b *Base) error {
	if b == nil {
		return nil
	}
	p, err := realPath(f)
	if err != nil {
		return err
	}
	if !Contains(b.path, p) {
		return ErrOutside
	}
	return nil
}

func checkInput(raw string) error {
	switch {
	case raw == "":
		return ErrEmpty
	case strings.IndexByte(raw, 0) >= 0:
		return ErrNUL
	case len(raw) > MaxLen:
		return ErrTooLong
	}
	return nil
}

func checkCanonical(path string) error {
	if err := checkInput(path); err != nil {
		return err
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("%w: %q", ErrNotCanonical, path)
	}
	return nil
}

// canonical makes p absolute and resolves every symbolic link in it, element by
// element, so a ".." after a link climbs out of the link's target as the kernel does
// (filepath.Abs alone would first delete "link/.." as text). It fails when any
// element does not exist.
func canonical(p string) (string, error) {
	abs, err := absolute(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// absolute makes p absolute without cleaning it, so that ".." keeps its meaning after
// a link: the working directory is joined in front of a relative path.
func absolute(p string) (string, error) {
	if runtime.GOOS == "windows" {
		// Windows itself removes ".." from a path as text before any link is
		// looked at, so the lexical form is the one the system opens.
		return filepath.Abs(p)
	}
	if filepath.IsAbs(p) {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return wd + string(filepath.Separator) + p, nil
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
