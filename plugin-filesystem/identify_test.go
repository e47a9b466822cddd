//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/hashwalk"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/mounts"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// ---- file_hash ----

func TestFileHash(t *testing.T) {
	d := lookDir(t)
	lookWrite(t, d+"/abc", "abc")
	lookWrite(t, d+"/empty", "")
	lookFIFO(t, d+"/fifo")
	lookSymlink(t, "abc", d+"/link")
	h := lookHarness(t)
	const (
		abc256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
		abc1   = "a9993e364706816aba3e25717850c26c9cd0d89d"
		empty  = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	)
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"sha256", kv("path", d+"/abc"), "hash|" + abc256 + "\nalgorithm|sha256\nsize|3\n" + lookOK},
		{"sha1", kv("path", d+"/abc", "algorithm", "sha1"), "hash|" + abc1 + "\nalgorithm|sha1\nsize|3\n" + lookOK},
		{"empty file", kv("path", d+"/empty"), "hash|" + empty + "\nalgorithm|sha256\nsize|0\n" + lookOK},
		{"through a link", kv("path", d+"/link", "base_dir", d), "hash|" + abc256 + "\nalgorithm|sha256\nsize|3\n" + lookOK},
		{"empty algorithm", kv("path", d+"/abc", "algorithm", ""), "error|unsupported algorithm: \n" + lookFail},
		{"upper-case algorithm", kv("path", d+"/abc", "algorithm", "SHA256"), "error|unsupported algorithm: SHA256\n" + lookFail},
		{"fifo", kv("path", d+"/fifo"), "error|path is not a regular file or does not exist\n" + lookFail},
		{"directory", kv("path", d), "error|path is not a regular file or does not exist\n" + lookFail},
		{"missing", kv("path", d+"/nope"), "error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"missing path", kv(), "error|missing required parameter: path\n" + lookFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lookRun(t, h, "file_hash", c.params); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
	t.Run("10 GiB cap", func(t *testing.T) {
		p := d + "/huge"
		lookSparse(t, p, "x", maxHashFile+1)
		want := "error|file too large for hashing (10737418241 bytes, max 10737418240)\n" + lookFail
		if got := lookRun(t, h, "file_hash", kv("path", p)); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("matches a streaming hash of a larger file", func(t *testing.T) {
		p := d + "/mid"
		data := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // several read chunks
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		want := "hash|" + hex.EncodeToString(sum[:]) + "\nalgorithm|sha256\nsize|" + strconv.Itoa(len(data)) + "\n" + lookOK
		if got := lookRun(t, h, "file_hash", kv("path", p)); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("copyCtx stops when cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := copyCtx(ctx, io.Discard, strings.NewReader("x")); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
}

// ---- get_acl ----

// lookACLBlob encodes a POSIX ACL extended attribute: version 2, then entries of
// tag, permission bits and id.
func lookACLBlob(entries ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

func lookSetACL(t *testing.T, path, attr string, blob []byte) {
	t.Helper()
	if err := unix.Setxattr(path, attr, blob, 0); err != nil {
		t.Fatalf("setxattr %s on %s: %v (the test needs a filesystem with POSIX ACLs)", attr, path, err)
	}
}

func lookUser(id uint32) string {
	if u, err := user.LookupId(strconv.Itoa(int(id))); err == nil {
		return u.Username
	}
	return strconv.Itoa(int(id))
}

func lookGroup(id uint32) string {
	if g, err := user.LookupGroupId(strconv.Itoa(int(id))); err == nil {
		return g.Name
	}
	return strconv.Itoa(int(id))
}

func TestGetACL(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it sets ACLs naming other users and reads owner root")
	}
	const undef = 0xFFFFFFFF
	d := lookDir(t)
	file := d + "/f"
	lookWrite(t, file, "x")
	lookSetACL(t, file, "system.posix_acl_access", lookACLBlob(
		[3]uint32{0x01, 6, undef}, [3]uint32{0x02, 6, 1001}, [3]uint32{0x04, 4, undef},
		[3]uint32{0x08, 5, 1002}, [3]uint32{0x10, 7, undef}, [3]uint32{0x20, 4, undef}))
	dir := d + "/dir"
	lookMkdir(t, dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lookSetACL(t, dir, "system.posix_acl_access", lookACLBlob(
		[3]uint32{0x01, 7, undef}, [3]uint32{0x04, 5, undef}, [3]uint32{0x08, 5, 1002},
		[3]uint32{0x10, 5, undef}, [3]uint32{0x20, 5, undef}))
	lookSetACL(t, dir, "system.posix_acl_default", lookACLBlob(
		[3]uint32{0x01, 7, undef}, [3]uint32{0x02, 7, 1001}, [3]uint32{0x04, 5, undef},
		[3]uint32{0x10, 7, undef}, [3]uint32{0x20, 0, undef}))
	defOnly := d + "/defonly"
	lookMkdir(t, defOnly)
	if err := os.Chmod(defOnly, 0o750); err != nil {
		t.Fatal(err)
	}
	lookSetACL(t, defOnly, "system.posix_acl_default", lookACLBlob(
		[3]uint32{0x01, 7, undef}, [3]uint32{0x04, 5, undef}, [3]uint32{0x20, 0, undef}))
	plain := d + "/plain"
	lookWrite(t, plain, "x")
	if err := os.Chmod(plain, 0o640); err != nil {
		t.Fatal(err)
	}
	lookFIFO(t, d+"/fifo")
	if err := os.Chmod(d+"/fifo", 0o600); err != nil {
		t.Fatal(err)
	}
	u1001, g1002 := lookUser(1001), lookGroup(1002)
	h := lookHarness(t)
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"file with named entries and a mask", kv("path", file),
			"owner|root\ngroup|root\npermissions|rw-rwxr--\nmode|0674\nacl|extended|-\n" +
				"ace|user|-|rw-|-\nace|user|" + u1001 + "|rw-|-\nace|group|-|r--|-\nace|group|" + g1002 + "|r-x|-\n" +
				"ace|mask|-|rwx|-\nace|other|-|r--|-\n" + lookOK},
		{"directory: access entries, then default ones", kv("path", dir, "base_dir", d),
			"owner|root\ngroup|root\npermissions|rwxr-xr-x\nmode|0755\nacl|extended|-\n" +
				"ace|user|-|rwx|-\nace|group|-|r-x|-\nace|group|" + g1002 + "|r-x|-\nace|mask|-|r-x|-\nace|other|-|r-x|-\n" +
				"ace|user|-|rwx|default\nace|user|" + u1001 + "|rwx|default\nace|group|-|r-x|default\n" +
				"ace|mask|-|rwx|default\nace|other|-|---|default\n" + lookOK},
		{"directory with only a default ACL", kv("path", defOnly),
			"owner|root\ngroup|root\npermissions|rwxr-x---\nmode|0750\nacl|extended|-\n" +
				"ace|user|-|rwx|default\nace|group|-|r-x|default\nace|other|-|---|default\n" + lookOK},
		{"no ACL", kv("path", plain), "owner|root\ngroup|root\npermissions|rw-r-----\nmode|0640\nacl|none|-\n" + lookOK},
		{"fifo is described, never opened", kv("path", d+"/fifo"),
			"owner|root\ngroup|root\npermissions|rw-------\nmode|0600\nacl|none|-\n" + lookOK},
		{"missing", kv("path", d+"/nope"), "error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"outside base", kv("path", plain, "base_dir", dir), "error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"missing path", kv(), "error|missing required parameter: path\n" + lookFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lookRun(t, h, "get_acl", c.params); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// ---- get_signature, get_version_info ----

func TestSignatureAndVersionOnLinux(t *testing.T) {
	d := lookDir(t)
	lookWrite(t, d+"/app", "x")
	h := lookHarness(t)
	for _, c := range []struct {
		name, action string
		params       map[string]string
		want         string
	}{
		{"signature: valid path", "get_signature", kv("path", d+"/app"),
			"error|code signature verification is not supported on this platform\n" + lookFail},
		{"signature: path checked first", "get_signature", kv("path", d+"/nope"),
			"error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"signature: base checked first", "get_signature", kv("path", d+"/app", "base_dir", d+"/app/.."+"/nope"),
			"error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"signature: missing path", "get_signature", kv(), "error|missing required parameter: path\n" + lookFail},
		{"version: valid path", "get_version_info", kv("path", d+"/app", "base_dir", d),
			"error|version info extraction is not supported on this platform\n" + lookFail},
		{"version: path checked first", "get_version_info", kv("path", d+"/nope"),
			"error|path is not accessible or outside allowed base directory\n" + lookFail},
		{"version: missing path", "get_version_info", kv(), "error|missing required parameter: path\n" + lookFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lookRun(t, h, c.action, c.params); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// ---- find_by_hash ----

func lookSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// lookHashTree lays out, below root:
//
//	a.txt sub/b.txt sub/deep/c.txt sub/deep/deeper/d.txt   all "target"
//	empty (0 bytes)  fifo  link_file -> a.txt  link_dir -> sub
func lookHashTree(t *testing.T, root string) {
	lookWrite(t, root+"/a.txt", "target")
	lookWrite(t, root+"/sub/b.txt", "target")
	lookWrite(t, root+"/sub/deep/c.txt", "target")
	lookWrite(t, root+"/sub/deep/deeper/d.txt", "target")
	lookWrite(t, root+"/empty", "")
	lookFIFO(t, root+"/fifo")
	lookSymlink(t, "a.txt", root+"/link_file")
	lookSymlink(t, "sub", root+"/link_dir")
}

// lookBounds lowers the walk's bounds for one test.
func lookBounds(t *testing.T, change func(*hashwalk.Bounds)) {
	t.Helper()
	old := findByHashBounds
	findByHashBounds = func() hashwalk.Bounds {
		b := hashwalk.DefaultBounds()
		change(&b)
		return b
	}
	t.Cleanup(func() { findByHashBounds = old })
}

// lookMounts replaces the mount table for one test.
func lookMounts(t *testing.T, load func() (*mounts.Table, error)) {
	t.Helper()
	old := loadMounts
	loadMounts = load
	t.Cleanup(func() { loadMounts = old })
}

func lookTruncated(reason string, c hashwalk.Counters) string {
	return fmt.Sprintf("truncated|%s|visited=%d|hashed=%d|skipped_unreadable=%d|skipped_symlink=%d|skipped_not_regular=%d|skipped_oversize=%d|skipped_network_mount=%d\n",
		reason, c.Visited, c.Hashed, c.SkippedUnreadable, c.SkippedSymlink, c.SkippedNotRegular, c.SkippedOversize, c.SkippedNetworkMount)
}

func lookConstrained(cause string) string {
	return "[result_status] CONSTRAINED / PARTIAL / filesystem:" + cause + "\n"
}

func TestFindByHash(t *testing.T) {
	d := lookDir(t)
	root := d + "/tree"
	lookHashTree(t, root)
	clean := d + "/clean"
	lookWrite(t, clean+"/x", "target")
	lookWrite(t, clean+"/y/z", "other")
	lookWrite(t, d+"/plainfile", "x")
	target := lookSHA("target")
	h := lookHarness(t)
	matches3 := "match|" + root + "/a.txt|6\nmatch|" + root + "/sub/b.txt|6\nmatch|" + root + "/sub/deep/c.txt|6\n"
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"default depth 3", kv("directory", root, "sha256", target),
			matches3 + lookTruncated("none", hashwalk.Counters{Visited: 10, Hashed: 18, SkippedSymlink: 2, SkippedNotRegular: 1}) +
				"matches_found|3\n" + lookOK},
		{"upper-case digest", kv("directory", root, "sha256", strings.ToUpper(target)),
			matches3 + lookTruncated("none", hashwalk.Counters{Visited: 10, Hashed: 18, SkippedSymlink: 2, SkippedNotRegular: 1}) +
				"matches_found|3\n" + lookOK},
		{"depth 10", kv("directory", root, "sha256", target, "max_depth", "10"),
			matches3 + "match|" + root + "/sub/deep/deeper/d.txt|6\n" +
				lookTruncated("none", hashwalk.Counters{Visited: 11, Hashed: 24, SkippedSymlink: 2, SkippedNotRegular: 1}) +
				"matches_found|4\n" + lookOK},
		{"depth 0 clamps to 1", kv("directory", root, "sha256", target, "max_depth", "0"),
			"match|" + root + "/a.txt|6\n" + lookTruncated("none", hashwalk.Counters{Visited: 6, Hashed: 6, SkippedSymlink: 2, SkippedNotRegular: 1}) +
				"matches_found|1\n" + lookOK},
		{"depth 11 clamps to 10", kv("directory", root, "sha256", target, "max_depth", "11"),
			matches3 + "match|" + root + "/sub/deep/deeper/d.txt|6\n" +
				lookTruncated("none", hashwalk.Counters{Visited: 11, Hashed: 24, SkippedSymlink: 2, SkippedNotRegular: 1}) +
				"matches_found|4\n" + lookOK},
		{"empty files are hashed and match", kv("directory", root, "sha256", lookSHA(""), "max_depth", "1"),
			"match|" + root + "/empty|0\n" + lookTruncated("none", hashwalk.Counters{Visited: 6, Hashed: 6, SkippedSymlink: 2, SkippedNotRegular: 1}) +
				"matches_found|1\n" + lookOK},
		{"clean walk has no truncated row", kv("directory", clean, "sha256", target), "match|" + clean + "/x|6\nmatches_found|1\n" + lookOK},
		{"nothing found", kv("directory", clean, "sha256", lookSHA("nothing")), "matches_found|0\n" + lookOK},
		{"missing directory", kv("sha256", target), "error|missing required parameters: directory, sha256\n" + lookFail},
		{"missing digest", kv("directory", root), "error|missing required parameters: directory, sha256\n" + lookFail},
		{"not accessible", kv("directory", d+"/nope", "sha256", target), "error|directory is not accessible\n" + lookFail},
		{"not a directory", kv("directory", d+"/plainfile", "sha256", target), "error|path is not a directory\n" + lookFail},
		{"pseudo filesystem root", kv("directory", "/proc", "sha256", target),
			lookTruncated("none", hashwalk.Counters{SkippedUnreadable: 1}) + "matches_found|0\n" + lookConstrained("skipped_unreadable")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := lookRun(t, h, "find_by_hash", c.params); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}

	t.Run("max_results", func(t *testing.T) {
		lookBounds(t, func(b *hashwalk.Bounds) { b.MaxMatches = 2; b.Deadline = time.Minute })
		o := h.Run("find_by_hash", kv("directory", root, "sha256", target))
		got := o.String()
		if len(o.Progress) == 0 || o.Progress[0] != (sdktest.Progress{Done: 1, Unit: "entries"}) {
			t.Errorf("progress %+v, want a first report of 1 entry", o.Progress)
		}
		if strings.Count(got, "match|") != 2 || !strings.Contains(got, "truncated|max_results|") ||
			!strings.HasSuffix(got, "matches_found|2\n"+lookConstrained("max_results")) {
			t.Fatalf("got:\n%s", got)
		}
		// Exactly the limit in a fully walked tree is a clean answer.
		if got := lookRun(t, h, "find_by_hash", kv("directory", clean, "sha256", target)); got != "match|"+clean+"/x|6\nmatches_found|1\n"+lookOK {
			t.Fatalf("got:\n%s", got)
		}
	})
	t.Run("file_cap", func(t *testing.T) {
		lookBounds(t, func(b *hashwalk.Bounds) { b.MaxVisited = 2 })
		got := lookRun(t, h, "find_by_hash", kv("directory", root, "sha256", target))
		if !strings.Contains(got, "truncated|file_cap|visited=2|") || !strings.HasSuffix(got, lookConstrained("file_cap")) {
			t.Fatalf("got:\n%s", got)
		}
	})
	t.Run("byte_cap", func(t *testing.T) {
		lookBounds(t, func(b *hashwalk.Bounds) { b.MaxBytes = 10 })
		got := lookRun(t, h, "find_by_hash", kv("directory", root, "sha256", target))
		if strings.Count(got, "match|") != 1 || !strings.Contains(got, "truncated|byte_cap|visited=10|hashed=6|") ||
			!strings.Contains(got, "skipped_oversize=2|") || !strings.HasSuffix(got, lookConstrained("byte_cap")) {
			t.Fatalf("got:\n%s", got)
		}
	})
	t.Run("per-file cap does not constrain", func(t *testing.T) {
		lookBounds(t, func(b *hashwalk.Bounds) { b.MaxFileSize = 5 })
		want := lookTruncated("none", hashwalk.Counters{Visited: 10, SkippedSymlink: 2, SkippedNotRegular: 1, SkippedOversize: 3}) +
			"matches_found|0\n" + lookOK
		if got := lookRun(t, h, "find_by_hash", kv("directory", root, "sha256", target)); got != want {
			t.Fatalf("got:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		big := d + "/big"
		lookMkdir(t, big)
		lookSparse(t, big+"/sparse", "", 2<<30)
		lookBounds(t, func(b *hashwalk.Bounds) { b.Deadline = 100 * time.Millisecond })
		start := time.Now()
		got := lookRun(t, h, "find_by_hash", kv("directory", big, "sha256", target))
		if !strings.Contains(got, "truncated|deadline|visited=1|") || !strings.HasSuffix(got, "matches_found|0\n"+lookConstrained("deadline")) {
			t.Fatalf("got:\n%s", got)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("took %v", el)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		big := d + "/big2"
		lookMkdir(t, big)
		lookSparse(t, big+"/sparse", "", 3<<30)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		o, err := h.RunContext(ctx, "find_by_hash", kv("directory", big, "sha256", target))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
		got := o.String()
		if !strings.Contains(got, "truncated|cancelled|visited=1|") || !strings.HasSuffix(got, "matches_found|0\n"+lookConstrained("cancelled")) {
			t.Fatalf("got:\n%s", got)
		}
	})

	t.Run("network mounts", func(t *testing.T) {
		nfs := d + "/nfs"
		lookMkdir(t, nfs)
		lookWrite(t, nfs+"/x", "target")
		lookSymlink(t, nfs, d+"/to_nfs")
		lookMkdir(t, d+"/withmount/local")
		lookWrite(t, d+"/withmount/local/x", "target")
		lookMkdir(t, d+"/withmount/share")
		lookWrite(t, d+"/withmount/share/x", "target")
		lookMounts(t, func() (*mounts.Table, error) {
			return mounts.NewTable([]mounts.Mount{
				{Point: "/", FSType: "ext4"},
				{Point: nfs, FSType: "nfs4"},
				{Point: d + "/withmount/share", FSType: "cifs"},
			}), nil
		})
		refused := lookTruncated("none", hashwalk.Counters{SkippedNetworkMount: 1}) + "matches_found|0\n" + lookConstrained("skipped_network_mount")
		for _, c := range []struct{ name, dir, want string }{
			{"root on a network mount", nfs, refused},
			// Judged before anything touches it: a path that does not even exist
			// there is refused as a mount, not reported as inaccessible.
			{"refused before it is touched", nfs + "/does/not/exist", refused},
			{"reached through a link", d + "/to_nfs", refused},
			{"mount below the root", d + "/withmount",
				"match|" + d + "/withmount/local/x|6\n" +
					lookTruncated("none", hashwalk.Counters{Visited: 3, Hashed: 6, SkippedNetworkMount: 1}) +
					"matches_found|1\n" + lookConstrained("skipped_network_mount")},
		} {
			t.Run(c.name, func(t *testing.T) {
				if got := lookRun(t, h, "find_by_hash", kv("directory", c.dir, "sha256", target)); got != c.want {
					t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
				}
			})
		}
	})
	t.Run("mount table unavailable", func(t *testing.T) {
		lookMounts(t, func() (*mounts.Table, error) { return nil, mounts.ErrUnavailable })
		want := "match|" + clean + "/x|6\nnetwork_mount_guard|unavailable\nmatches_found|1\n" +
			lookConstrained("network_mount_guard_unavailable")
		if got := lookRun(t, h, "find_by_hash", kv("directory", clean, "sha256", target)); got != want {
			t.Errorf("got:\n%s\nwant:\n%s", got, want)
		}
	})
}

// ---- as an unprivileged user ----

const lookUnprivEnv = "YUZU_LOOK_UNPRIV_DIR"

// TestLookUnreadable checks what the look actions answer for directories and files
// they may not read. Permissions do not stop root, so the checks run in a copy of
// this test binary started as the unprivileged user nobody (65534).
func TestLookUnreadable(t *testing.T) {
	// Re-run as the unprivileged user (below), this same test checks the tree the
	// root run built.
	if dir := os.Getenv(lookUnprivEnv); dir != "" {
		lookUnreadableAsNobody(t, dir)
		return
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root, to start itself again as user nobody")
	}
	dir, err := os.MkdirTemp("", "yuzu-look-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
			os.Chmod(p, 0o755)
			return nil
		})
		os.RemoveAll(dir)
	})
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree := dir + "/tree"
	lookWrite(t, tree+"/open/f", "target")
	lookWrite(t, tree+"/locked/f", "target")
	lookWrite(t, tree+"/secret", "target")
	lookMkdir(t, dir+"/closed")
	for p, mode := range map[string]os.FileMode{
		dir: 0o755, tree: 0o755, tree + "/open": 0o755, tree + "/open/f": 0o644,
		tree + "/locked": 0, tree + "/secret": 0, dir + "/closed": 0,
	} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := dir + "/look.test"
	in, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, in, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestLookUnreadable$", "-test.v", "-test.count=1", "-test.timeout=120s")
	cmd.Env = append(os.Environ(), lookUnprivEnv+"="+dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLookUnreadable") {
		t.Fatalf("unprivileged run failed (%v):\n%s", err, out)
	}
}

// TestLookUnreadableChild is the half of TestLookUnreadable that runs as nobody; on
// its own it skips.

// lookUnreadableAsNobody is the half of TestLookUnreadable that runs as the
// unprivileged user, on the tree the root run built in dir.
func lookUnreadableAsNobody(t *testing.T, dir string) {
	if os.Geteuid() == 0 {
		t.Fatal("running as root, where permissions deny nothing")
	}
	tree := dir + "/tree"
	target := lookSHA("target")
	h := lookHarness(t)
	for _, c := range []struct {
		name, action string
		params       map[string]string
		want         string
	}{
		{"find_by_hash counts what it could not read", "find_by_hash", kv("directory", tree, "sha256", target),
			"match|" + tree + "/open/f|6\n" +
				lookTruncated("none", hashwalk.Counters{Visited: 4, Hashed: 6, SkippedUnreadable: 2}) +
				"matches_found|1\n" + lookConstrained("skipped_unreadable")},
		{"find_by_hash on a root it cannot list", "find_by_hash", kv("directory", dir+"/closed", "sha256", target),
			lookTruncated("none", hashwalk.Counters{SkippedUnreadable: 1}) + "matches_found|0\n" + lookConstrained("skipped_unreadable")},
		{"search_dir skips what it cannot list", "search_dir", kv("root", tree, "pattern", "*", "match_type", "both"), ""},
		{"read", "read", kv("path", tree+"/secret"), "error|failed to open file\n" + lookFail},
		{"file_hash", "file_hash", kv("path", tree+"/secret"), "error|failed to compute hash\n" + lookFail},
		{"list_dir", "list_dir", kv("path", dir+"/closed"), "error|failed to open directory\n" + lookFail},
		{"exists behind a locked directory", "exists", kv("path", tree+"/locked/f"), "exists|false\n" + lookOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := h.Run(c.action, c.params)
			got := o.String()
			if c.want == "" {
				rows := append([]string(nil), o.Rows...)
				slices.Sort(rows)
				want := []string{
					"result|" + tree + "/locked|directory", "result|" + tree + "/open/f|file",
					"result|" + tree + "/open|directory", "result|" + tree + "/secret|file", "total_matches|4",
				}
				if fmt.Sprint(rows) != fmt.Sprint(want) || o.Result.Code != 0 {
					t.Errorf("got %q, want %q", rows, want)
				}
				return
			}
			if got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}
