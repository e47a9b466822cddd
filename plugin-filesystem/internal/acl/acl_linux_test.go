package acl

import (
	"context"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
	"golang.org/x/sys/unix"
)

// setACL stores an ACL with the kernel's own checks, skipping the test where the
// filesystem cannot hold one.
func setACL(t *testing.T, path, attr string, entries ...POSIXEntry) {
	t.Helper()
	err := unix.Setxattr(path, attr, posixBlob(2, entries...), 0)
	if errors.Is(err, unix.ENOTSUP) {
		t.Skipf("the filesystem of %s does not support POSIX ACLs", path)
	}
	if errors.Is(err, unix.EPERM) {
		t.Skipf("not allowed to set ACLs on %s: %v", path, err)
	}
	if err != nil {
		t.Fatalf("setxattr %s: %v", attr, err)
	}
}

func userName(id uint32) string {
	s := strconv.FormatUint(uint64(id), 10)
	if u, err := user.LookupId(s); err == nil {
		return u.Username
	}
	return s
}

func groupName(id uint32) string {
	s := strconv.FormatUint(uint64(id), 10)
	if g, err := user.LookupGroupId(s); err == nil {
		return g.Name
	}
	return s
}

// openBase opens base ("" for none) as the plugin does for one command.
func openBase(t *testing.T, base string) *pathcheck.Base {
	t.Helper()
	b, err := pathcheck.OpenBase(base)
	if err != nil {
		t.Fatalf("OpenBase(%q): %v", base, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func gather(t *testing.T, path, base string) []Row {
	t.Helper()
	rows, err := Gather(context.Background(), path, openBase(t, base))
	if err != nil {
		t.Fatalf("Gather(%s): %v", path, err)
	}
	return rows
}

func TestGatherFileWithMask(t *testing.T) {
	dir := tempDir(t)
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f, 0o644); err != nil {
		t.Fatal(err)
	}
	// The upstream Linux sample's ACL. Ids unlikely to exist keep the names numeric
	// on most machines; the expectation asks the same lookup either way.
	const uid, gid = 54321, 54322
	setACL(t, f, xattrAccess,
		POSIXEntry{TagUserObj, 6, undefinedID}, POSIXEntry{TagUser, 6, uid},
		POSIXEntry{TagGroupObj, 4, undefinedID}, POSIXEntry{TagGroup, 5, gid},
		POSIXEntry{TagMask, 7, undefinedID}, POSIXEntry{TagOther, 4, undefinedID})
	var st unix.Stat_t
	if err := unix.Stat(f, &st); err != nil {
		t.Fatal(err)
	}
	want := []Row{
		newRow("owner", userName(st.Uid)), newRow("group", groupName(st.Gid)),
		// Setting the ACL moved the mask into the group bits of the mode.
		newRow("permissions", "rw-rwxr--"), newRow("mode", "0674"),
		newRow("acl", "extended", "-"),
		newRow("ace", "user", "-", "rw-", "-"), newRow("ace", "user", userName(uid), "rw-", "-"),
		newRow("ace", "group", "-", "r--", "-"), newRow("ace", "group", groupName(gid), "r-x", "-"),
		newRow("ace", "mask", "-", "rwx", "-"), newRow("ace", "other", "-", "r--", "-"),
	}
	if got := gather(t, f, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %v\nwant %v", got, want)
	}
}

func TestGatherDirectoryAccessThenDefault(t *testing.T) {
	dir := tempDir(t)
	d := filepath.Join(dir, "shared")
	if err := os.Mkdir(d, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o750); err != nil {
		t.Fatal(err)
	}
	setACL(t, d, xattrAccess,
		POSIXEntry{TagUserObj, 7, undefinedID}, POSIXEntry{TagUser, 5, 0},
		POSIXEntry{TagGroupObj, 5, undefinedID}, POSIXEntry{TagMask, 5, undefinedID},
		POSIXEntry{TagOther, 0, undefinedID})
	setACL(t, d, xattrDefault,
		POSIXEntry{TagUserObj, 7, undefinedID}, POSIXEntry{TagGroupObj, 5, undefinedID},
		POSIXEntry{TagGroup, 7, 0}, POSIXEntry{TagMask, 7, undefinedID},
		POSIXEntry{TagOther, 0, undefinedID})
	var st unix.Stat_t
	if err := unix.Stat(d, &st); err != nil {
		t.Fatal(err)
	}
	want := []Row{
		newRow("owner", userName(st.Uid)), newRow("group", groupName(st.Gid)),
		newRow("permissions", "rwxr-x---"), newRow("mode", "0750"),
		newRow("acl", "extended", "-"),
		newRow("ace", "user", "-", "rwx", "-"), newRow("ace", "user", userName(0), "r-x", "-"),
		newRow("ace", "group", "-", "r-x", "-"), newRow("ace", "mask", "-", "r-x", "-"),
		newRow("ace", "other", "-", "---", "-"),
		newRow("ace", "user", "-", "rwx", "default"), newRow("ace", "group", "-", "r-x", "default"),
		newRow("ace", "group", groupName(0), "rwx", "default"), newRow("ace", "mask", "-", "rwx", "default"),
		newRow("ace", "other", "-", "---", "default"),
	}
	if got := gather(t, d, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %v\nwant %v", got, want)
	}
}

func TestGatherDefaultOnly(t *testing.T) {
	dir := tempDir(t)
	setACL(t, dir, xattrDefault,
		POSIXEntry{TagUserObj, 7, undefinedID}, POSIXEntry{TagGroupObj, 0, undefinedID},
		POSIXEntry{TagOther, 0, undefinedID})
	got := gather(t, dir, dir)
	if len(got) != 8 || !reflect.DeepEqual(got[4], newRow("acl", "extended", "-")) ||
		!reflect.DeepEqual(got[5], newRow("ace", "user", "-", "rwx", "default")) ||
		!reflect.DeepEqual(got[7], newRow("ace", "other", "-", "---", "default")) {
		t.Errorf("rows: %v", got)
	}
}

func TestGatherNoACL(t *testing.T) {
	dir := tempDir(t)
	f := filepath.Join(dir, "plain")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(f, 0o4711); err != nil {
		t.Fatal(err)
	}
	// Probe ACL support so a filesystem without it skips instead of failing.
	setACL(t, dir, xattrDefault, POSIXEntry{TagUserObj, 7, undefinedID},
		POSIXEntry{TagGroupObj, 0, undefinedID}, POSIXEntry{TagOther, 0, undefinedID})
	var st unix.Stat_t
	if err := unix.Stat(f, &st); err != nil {
		t.Fatal(err)
	}
	got := gather(t, f, dir)
	want := []Row{
		newRow("owner", userName(st.Uid)), newRow("group", groupName(st.Gid)),
		newRow("permissions", "rwx--x--x"), newRow("mode", "4711"), newRow("acl", "none", "-"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %v\nwant %v", got, want)
	}
}

func TestGatherUnsupported(t *testing.T) {
	// procfs carries no ACLs: getxattr answers EOPNOTSUPP.
	if _, err := os.Stat("/proc/version"); err != nil {
		t.Skip("no /proc")
	}
	got := gather(t, "/proc/version", "")
	if len(got) != 5 || !reflect.DeepEqual(got[4], newRow("acl", "unsupported", "-")) {
		t.Errorf("rows: %v", got)
	}
}

func TestGatherFIFODoesNotBlock(t *testing.T) {
	dir := tempDir(t)
	p := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	got := gather(t, p, dir)
	if !reflect.DeepEqual(got[2], newRow("permissions", "rw-r-----")) || !reflect.DeepEqual(got[3], newRow("mode", "0640")) {
		t.Errorf("rows: %v", got)
	}
}

func TestGatherRefusesSwapsAndEscapes(t *testing.T) {
	dir := tempDir(t)
	base := filepath.Join(dir, "base")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(base, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b := openBase(t, base)
	canon, err := pathcheck.Validate(f, b)
	if err != nil {
		t.Fatal(err)
	}
	// Swapped for a link after validation.
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, f); err != nil {
		t.Fatal(err)
	}
	if rows, err := Gather(context.Background(), canon, b); !errors.Is(err, pathcheck.ErrSymlink) || rows != nil {
		t.Errorf("swapped file: rows %v, err %v", rows, err)
	}
	// A path outside the base directory.
	if rows, err := Gather(context.Background(), secret, b); !errors.Is(err, pathcheck.ErrOutside) || rows != nil {
		t.Errorf("outside base: rows %v, err %v", rows, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Gather(ctx, secret, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestGatherWithoutProc takes the path-based fallback used where /proc is not
// mounted, including its check that the path still names the opened file.
func TestGatherWithoutProc(t *testing.T) {
	saved := procFD
	procFD = "/nonexistent-proc/"
	defer func() { procFD = saved }()
	dir := tempDir(t)
	setACL(t, dir, xattrDefault, POSIXEntry{TagUserObj, 7, undefinedID},
		POSIXEntry{TagGroupObj, 5, undefinedID}, POSIXEntry{TagOther, 1, undefinedID})
	got := gather(t, dir, "")
	if len(got) != 8 || !reflect.DeepEqual(got[7], newRow("ace", "other", "-", "--x", "default")) {
		t.Errorf("rows: %v", got)
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	// The path now names another file than the descriptor.
	other := filepath.Join(tempDir(t), "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(other, unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := readACL(fd, dir, &st, xattrAccess); err != nil {
		t.Errorf("same file: %v", err)
	}
	var otherSt unix.Stat_t
	if err := unix.Fstat(fd, &otherSt); err != nil {
		t.Fatal(err)
	}
	if _, err := readACL(fd, dir, &otherSt, xattrAccess); !errors.Is(err, pathcheck.ErrChanged) {
		t.Errorf("path names another file: err = %v", err)
	}
}
