package acl

import (
	"context"
	"fmt"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
	"github.com/yuzugo/yuzu/sdk/subprocess"
	"golang.org/x/sys/unix"
)

// lsPath is the system ls, named absolutely: the runner never searches PATH.
const lsPath = "/bin/ls"

// Gather reads the owner, mode and extended ACL of path, a canonical path from
// pathcheck.Validate, and returns the get_acl rows.
//
// Release builds have no cgo, so libSystem's acl_get_file and acl_to_text cannot be
// called. The ACL comes from `/bin/ls -l -e -d -i -q -- <path>` run through the SDK's
// bounded runner instead: ls ships with every macOS, calls those same functions and
// has printed its ACL lines in the same format for many releases. The output is tied
// to the file examined here by its inode and type, and the path is validated again
// (base directory included) right before ls runs, so a path swapped in between is
// refused instead of reported. What ls cannot show is listed in docs/filesystem.md:
// ACL-level flags (the acl row always says "-"), permission names ls filters by file
// type (a file's inheritance flags, the directory spellings list/search/add_file), and
// an ACL that exists with no entries (reported as none).
func Gather(ctx context.Context, path string, base *pathcheck.Base) ([]Row, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, fmt.Errorf("stat failed: %w", err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil, fmt.Errorf("%s: %w", path, pathcheck.ErrChanged)
	}
	if again, err := pathcheck.Validate(path, base); err != nil {
		return nil, err
	} else if again != path {
		return nil, fmt.Errorf("%s: %w", path, pathcheck.ErrChanged)
	}
	res, err := subprocess.Run(ctx, subprocess.Spec{Argv: []string{lsPath, "-l", "-e", "-d", "-i", "-q", "--", path}})
	if err != nil {
		return nil, fmt.Errorf("running %s: %w", lsPath, err)
	}
	switch {
	case res.TimedOut:
		return nil, fmt.Errorf("%s timed out", lsPath)
	case res.OutputTruncated:
		return nil, fmt.Errorf("%s output exceeded %d bytes", lsPath, subprocess.DefaultMaxOutput)
	case res.ExitCode != 0:
		return nil, fmt.Errorf("%s failed (%s, exit code %d)", lsPath, res.Reason, res.ExitCode)
	}
	l, err := ParseLsACL(string(res.Output))
	if err != nil {
		return nil, err
	}
	if l.Inode != st.Ino || l.FileType != lsTypeChar(uint32(st.Mode)) {
		return nil, fmt.Errorf("%s: %w", path, pathcheck.ErrChanged)
	}
	names := newIDNames()
	return MacRows(MacInfo{
		Owner:   names.user(st.Uid),
		Group:   names.group(st.Gid),
		Mode:    uint32(st.Mode),
		Entries: l.Entries,
	}), nil
}

// lsTypeChar is the first character ls prints in the mode string for st_mode.
func lsTypeChar(mode uint32) byte {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return 'd'
	case unix.S_IFLNK:
		return 'l'
	case unix.S_IFIFO:
		return 'p'
	case unix.S_IFCHR:
		return 'c'
	case unix.S_IFBLK:
		return 'b'
	case unix.S_IFSOCK:
		return 's'
	case unix.S_IFWHT:
		return 'w'
	}
	return '-'
}
