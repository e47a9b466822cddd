package main

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/acl"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/hashwalk"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/mounts"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// The identify actions: file_hash, get_acl, get_signature, get_version_info and
// find_by_hash. Their rows, errors and limits are described in docs/filesystem.md.

func fileHashDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Computes the SHA-256 or SHA-1 of one regular file of at most 10 GiB"),
		pathParam("path", "The file to hash.", "missing required parameter: path"),
		sdk.Param("algorithm", sdk.TypeString, "sha256 or sha1.", sdk.Default("sha256"),
			sdk.Enum("sha256", "sha1"), sdk.Message(sdk.RuleEnum, "unsupported algorithm: {value}")),
		baseDirParam(),
		sdk.Row("hash", "hash"),
		sdk.Row("algorithm", "algorithm"),
		sdk.Row("size", "size:int64"),
		everywhere,
	}
}

// fileHashTimeout bounds one file_hash, as upstream bounds its hashing tool.
const fileHashTimeout = 300 * time.Second

// hashChunk is file_hash's read size; the context is checked between chunks.
const hashChunk = 1 << 20

func fileHash(ctx context.Context, req *sdk.Request, out *sdk.Output, base *pathcheck.Base) (sdk.Result, error) {
	canon, res := validated(out, req.Params.Get("path", ""), base)
	if res != nil {
		return *res, nil
	}
	algo := req.Params.Get("algorithm", "sha256")
	var h hash.Hash
	switch algo {
	case "sha256":
		h = sha256.New()
	case "sha1":
		h = sha1.New()
	default:
		return out.Fail("unsupported algorithm: " + algo), nil
	}
	const notRegular = "path is not a regular file or does not exist"
	fi, err := statPath(base, canon)
	if err != nil || !fi.Mode().IsRegular() {
		return out.Fail(notRegular), nil
	}
	tooBig := func(size int64) sdk.Result {
		return out.Failf("file too large for hashing (%d bytes, max %d)", size, int64(maxHashFile))
	}
	if fi.Size() > maxHashFile {
		return tooBig(fi.Size()), nil
	}
	f, err := openForRead(base, canon)
	if err != nil {
		if isSwap(err) {
			return out.Fail(msgNotAccessible), nil
		}
		req.Log.Warn("cannot open the file to hash", "path", canon, "err", err)
		return out.Fail("failed to compute hash"), nil
	}
	defer f.Close()
	now, err := f.Stat()
	if err != nil || !now.Mode().IsRegular() || !os.SameFile(fi, now) {
		return out.Fail(msgNotAccessible), nil
	}
	if now.Size() > maxHashFile {
		return tooBig(now.Size()), nil
	}
	hctx, cancel := context.WithTimeout(ctx, fileHashTimeout)
	defer cancel()
	n, err := copyCtx(hctx, h, io.LimitReader(f, maxHashFile+1))
	switch {
	case err != nil && ctx.Err() != nil:
		return out.Fail("hashing stopped: " + ctx.Err().Error()), nil
	case err != nil:
		req.Log.Warn("hashing failed", "path", canon, "err", err)
		return out.Fail("failed to compute hash"), nil
	case n > maxHashFile:
		// It grew past the cap while it was read.
		return tooBig(n), nil
	}
	out.Row("hash", hex.EncodeToString(h.Sum(nil)))
	out.Row("algorithm", algo)
	out.Row("size", strconv.FormatInt(n, 10))
	return sdk.Done(), nil
}

// copyCtx copies r into w in hashChunk pieces until EOF, stopping when ctx ends.
func copyCtx(ctx context.Context, w io.Writer, r io.Reader) (int64, error) {
	buf := make([]byte, hashChunk)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, err := r.Read(buf)
		if k > 0 {
			w.Write(buf[:k]) // a hash never fails to write
			n += int64(k)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func getACLDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Returns a path's owner, group, permission bits and access control list"),
		pathParam("path", "The file or directory to inspect.", "missing required parameter: path"),
		baseDirParam(),
		sdk.Row("sddl", "sddl"),
		sdk.Row("control", "control"),
		sdk.Row("owner", "owner"),
		sdk.Row("group", "group"),
		sdk.Row("permissions", "permissions"),
		sdk.Row("mode", "mode"),
		sdk.Row("acl", "acl", "acl_flags"),
		sdk.Row("ace", "ace_type", "account", "access_mask", "ace_flags"),
		sdk.Columns("sddl", "ace_type", "account", "access_mask", "owner", "group", "permissions", "mode",
			"ace_perms", "ace_flags", "acl", "acl_flags", "control"),
		sdk.OnLinux(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "posix_acl_xattr"}),
		sdk.OnDarwin(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "ls_le"}),
		sdk.OnWindows(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "GetNamedSecurityInfo"}),
	}
}

func getACL(ctx context.Context, req *sdk.Request, out *sdk.Output, base *pathcheck.Base) (sdk.Result, error) {
	canon, res := validated(out, req.Params.Get("path", ""), base)
	if res != nil {
		return *res, nil
	}
	rows, err := acl.Gather(ctx, canon, base)
	if err != nil {
		if isSwap(err) || errors.Is(err, pathcheck.ErrNotExist) {
			return out.Fail(msgNotAccessible), nil
		}
		// The whole ACL is read before any row is built, so a failure is this one
		// row. Windows words it as upstream does: GetNamedSecurityInfo failed
		// (error <n>).
		return out.Fail(err.Error()), nil
	}
	writeRows(out, rows)
	return sdk.Done(), nil
}

func getSignatureDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Verifies a file's code signature (WinVerifyTrust on Windows, codesign on macOS)"),
		pathParam("path", "The executable or bundle to verify.", "missing required parameter: path"),
		baseDirParam(),
		sdk.Row("signature_status", "signature_status"),
		sdk.OnWindows(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "WinVerifyTrust"}),
		sdk.OnDarwin(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "codesign"}),
		notOnLinux,
	}
}

// onValidPath runs act, one OS's leg of an action, on the canonical form of the path
// parameter once validated has accepted it against base_dir.
func onValidPath(act func(ctx context.Context, req *sdk.Request, out *sdk.Output, canon string, base *pathcheck.Base) sdk.Result) sdk.Handler {
	return withBase(msgNotAccessible, func(ctx context.Context, req *sdk.Request, out *sdk.Output, base *pathcheck.Base) (sdk.Result, error) {
		canon, res := validated(out, req.Params.Get("path", ""), base)
		if res != nil {
			return *res, nil
		}
		return act(ctx, req, out, canon, base), nil
	})
}

func getVersionInfoDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Reads an executable's version resources (Windows) or bundle versions (macOS)"),
		pathParam("path", "The executable, DLL, .app bundle or Info.plist.", "missing required parameter: path"),
		baseDirParam(),
		sdk.Row("file_version", "file_version"),
		sdk.Row("product_version", "product_version"),
		sdk.Row("company_name", "company_name"),
		sdk.Row("file_description", "file_description"),
		sdk.Row("internal_name", "internal_name"),
		sdk.Row("original_filename", "original_filename"),
		sdk.Row("product_name", "product_name"),
		sdk.Row("legal_copyright", "legal_copyright"),
		sdk.Row("version_status", "version_status"),
		sdk.OnWindows(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "GetFileVersionInfoW"}),
		sdk.OnDarwin(sdk.OSSupport{Level: sdk.SupportSupported, Mechanism: "plutil"}),
		notOnLinux,
	}
}

func findByHashDecl() []sdk.ActionOption {
	missing := "missing required parameters: directory, sha256"
	return []sdk.ActionOption{
		sdk.Describe("Walks a directory tree within fixed bounds and lists the regular files whose SHA-256 equals sha256"),
		sdk.Param("directory", sdk.TypeString, "Root of the walk.", sdk.Required(), sdk.MaxLength(maxPathBytes),
			sdk.Message(sdk.RuleRequired, missing)),
		sdk.Param("sha256", sdk.TypeString, "The hex digest to look for, case-insensitive.", sdk.Required(),
			sdk.MinLength(64), sdk.MaxLength(64), sdk.Message(sdk.RuleRequired, missing)),
		sdk.Param("max_depth", sdk.TypeInt32, "How many levels to descend, 1 to 10.",
			sdk.Default("3"), sdk.Minimum(1), sdk.Maximum(10), sdk.Clamped()),
		sdk.Row("match", "path", "size:int64"),
		sdk.Row("network_mount_guard", "state"),
		sdk.Row("truncated", "reason", "visited", "hashed", "skipped_unreadable", "skipped_symlink",
			"skipped_not_regular", "skipped_oversize", "skipped_network_mount"),
		sdk.Row("matches_found", "matches_found:int32"),
		sdk.Columns("row_kind", "path", "size:int64"),
		everywhere,
	}
}

// Seams for the in-process tests: the walk's bounds are fixed in the plugin, and
// the mount table is the system's. Tests lower the bounds to trip each one cheaply
// and hand in a table with a network mount of their making.
var (
	findByHashBounds = hashwalk.DefaultBounds
	loadMounts       = mounts.Load
)

func findByHash(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	dir := req.Params.Get("directory", "")
	sum := strings.ToLower(req.Params.Get("sha256", ""))
	if _, err := hex.DecodeString(sum); err != nil {
		// Upstream walks the tree and can never match; saying so at once is
		// cheaper for the device and clearer for the caller.
		return out.Fail("invalid sha256: expected 64 hexadecimal digits"), nil
	}

	// The mount list is read before anything touches the directory: an open or a
	// listing on a dead hard-mounted server blocks with no deadline.
	table, err := loadMounts()
	if err != nil {
		req.Log.Warn("walking without the network-mount guard", "err", err)
		table = nil
	}
	if onNetwork(table, dir) {
		return hashResult(out, hashwalk.Result{Reason: hashwalk.ReasonNone,
			Counters: hashwalk.Counters{SkippedNetworkMount: 1}}), nil
	}
	canon, err := pathcheck.Validate(dir, nil)
	if err != nil {
		return out.Fail("directory is not accessible"), nil
	}
	depth, _ := req.Params.Int("max_depth", 3)
	depth = min(max(depth, 1), 10)
	if table.Classify(canon) == mounts.Network {
		// Reached through a link: only the canonical spelling shows the mount.
		return hashResult(out, hashwalk.Result{Reason: hashwalk.ReasonNone,
			Counters: hashwalk.Counters{SkippedNetworkMount: 1}}), nil
	}
	if fi, err := os.Stat(canon); err != nil || !fi.IsDir() {
		return out.Fail("path is not a directory"), nil
	}
	r, err := hashwalk.Walk(ctx, hashwalk.Request{
		Root:     canon,
		SHA256:   sum,
		MaxDepth: depth,
		Mounts:   table,
		Bounds:   findByHashBounds(),
		// How many entries are below the root is not known before the walk.
		Progress: func(visited int64) { out.Progress(visited, 0, "entries") },
	})
	if err != nil {
		return sdk.Result{}, fmt.Errorf("find_by_hash: %w", err)
	}
	return hashResult(out, r), nil
}

// onNetwork judges the directory as the caller spelt it, made absolute lexically,
// before anything touches it: on Linux and macOS by the mount list, on Windows by
// its spelling (a UNC or device path) and its drive's type. A nil table (no mount
// list) judges nothing.
func onNetwork(table *mounts.Table, dir string) bool {
	if table == nil {
		return false
	}
	if table.Classify(dir) == mounts.Network {
		return true
	}
	if abs, err := filepath.Abs(dir); err == nil && abs != dir {
		return table.Classify(abs) == mounts.Network
	}
	return false
}

// hashResult writes a walk's rows and returns its status: CONSTRAINED / PARTIAL
// with provenance filesystem:<cause> when part of the tree was not examined.
func hashResult(out *sdk.Output, r hashwalk.Result) sdk.Result {
	writeRows(out, hashwalk.Rows(r))
	if st := hashwalk.StatusOf(r); st.Constrained {
		return sdk.Partial(st.Provenance)
	}
	return sdk.Done()
}
