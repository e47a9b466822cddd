package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/filelock"
	"github.com/yuzugo/yuzu/sdk/safefile"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pattern"
)

// Error texts shared by several actions, as upstream words them.
const (
	msgNotAccessible = "path is not accessible or outside allowed base directory"
	msgNotRegular    = "path is not a regular file"
	msgOpenFailed    = "failed to open file"
	msgWriteFailed   = "failed to write file"
	msgNested        = "regex rejected: nested quantifiers risk catastrophic backtracking"
	// msgChanged answers a file that was swapped, moved or replaced between the moment
	// it was opened and the moment its new content was to be put in place. Upstream
	// has no such check; nothing is written.
	msgChanged = "file was replaced or moved while it was being changed; nothing was written"
)

// testHook, when set by a test, runs at two moments of a change: stage "open" right
// before the validated file is opened, and stage "commit" after the target was read
// and the new content computed, just before the checks that precede the write. Tests
// use it to swap the target at the worst possible moments.
var testHook func(stage, canon string)

func hook(stage, canon string) {
	if testHook != nil {
		testHook(stage, canon)
	}
}

func tooLarge(size int64) string {
	return fmt.Sprintf("file too large (%d bytes, max %d)", size, maxTextFile)
}

// cancelled turns a context error into the row a change answers when it stops before
// touching the file. A command whose deadline has passed counts as timed out even when
// the agent's cancellation arrived first.
func cancelled(req *sdk.Request, out *sdk.Output, err error) sdk.Result {
	if errors.Is(err, context.DeadlineExceeded) || (!req.Deadline.IsZero() && !time.Now().Before(req.Deadline)) {
		return out.Fail("timed out before the file was changed")
	}
	return out.Fail("cancelled before the file was changed")
}

// target is an existing regular file a change action works on: validated, opened
// without following links and, for writers, held under the directory's write lock.
type target struct {
	base  string
	canon string
	f     *os.File
	fi    fs.FileInfo
	// dir is the directory the new content is written into, pinned when the target
	// was opened; nil for readers.
	dir *pinnedDir
	// lock is held from before the target is opened until after the write, so writers
	// of one directory that go through this plugin (in this process or another one
	// sharing the data directory) never interleave.
	lock *writeLock
}

// openTarget opens the canonical path canon for a text action, checking in upstream's
// order that it is a regular file and (when limit > 0) no larger than limit. A writer
// (write true) first pins the directory and takes its write lock, so what it reads is
// what it replaces. flag is the open mode; the open never follows a link and never
// blocks on a FIFO. On failure the error row has been written and the result is
// returned.
func openTarget(ctx context.Context, req *sdk.Request, out *sdk.Output, base, canon string, flag int,
	limit int64, write bool, openMsg string) (*target, *sdk.Result) {
	fail := func(msg string) (*target, *sdk.Result) {
		r := out.Fail(msg)
		return nil, &r
	}
	if res := statRegular(out, canon, limit); res != nil {
		return nil, res
	}
	t := &target{base: base, canon: canon}
	var err error
	if write {
		if t.dir, err = pinDir(base, filepath.Dir(canon), true); err != nil {
			req.Log.Debug("cannot open the directory to write into", "dir", filepath.Dir(canon), "err", err)
			return fail(openMsg)
		}
		if t.lock, err = lockDir(ctx, req, t.dir); err != nil {
			t.close()
			r := cancelled(req, out, err)
			return nil, &r
		}
	}
	hook("open", canon)
	if t.f, err = pathcheck.OpenIn(base, canon, flag|nonBlock, 0); err != nil {
		req.Log.Debug("cannot open file", "path", canon, "err", err)
		t.close()
		return fail(openMsg)
	}
	if t.fi, err = t.f.Stat(); err != nil || !t.fi.Mode().IsRegular() {
		t.close()
		return fail(msgNotRegular)
	}
	if limit > 0 && t.fi.Size() > limit {
		t.close()
		return fail(tooLarge(t.fi.Size()))
	}
	if write && !t.dir.holds(filepath.Base(canon), t.f) {
		t.close()
		return fail(msgChanged)
	}
	return t, nil
}

// statRegular checks, before anything is opened, that canon is a regular file of at
// most limit bytes (no bound when limit is 0), as upstream does: a device is refused
// without being opened, since opening some devices has effects of its own. The checks
// are made again on the open descriptor.
func statRegular(out *sdk.Output, canon string, limit int64) *sdk.Result {
	fi, err := os.Stat(canon)
	if err != nil || !fi.Mode().IsRegular() {
		r := out.Fail(msgNotRegular)
		return &r
	}
	if limit > 0 && fi.Size() > limit {
		r := out.Fail(tooLarge(fi.Size()))
		return &r
	}
	return nil
}

func (t *target) close() {
	if t.f != nil {
		t.f.Close()
	}
	if t.lock != nil {
		t.lock.release()
	}
	if t.dir != nil {
		t.dir.close()
	}
}

// readAll reads the whole target: at most maxTextFile bytes, even if the file grew
// since its size was checked.
func (t *target) readAll() ([]byte, error) { return safefile.ReadAll(t.f, t.fi, maxTextFile) }

// commit puts data in place of the target through the atomic writer, after making
// sure the name still holds the file that was read and that it is still inside
// base_dir. errChanged means nothing was written because of a swap.
func (t *target) commit(req *sdk.Request, data []byte) error {
	hook("commit", t.canon)
	name := filepath.Base(t.canon)
	if !t.dir.holds(name, t.f) {
		return errChanged
	}
	if err := pathcheck.CheckInside(t.f, t.base); err != nil {
		return fmt.Errorf("%w: %w", errChanged, err)
	}
	if runtime.GOOS == "windows" {
		// Go opens files on Windows without FILE_SHARE_DELETE, so a handle of ours on
		// the target would make the rename over it fail. Everything has been read.
		t.f.Close()
		t.f = nil
	}
	dest := t.dir.path(name)
	t.removeStale(req, dest)
	err := atomicfile.Write(dest, data)
	var dse *atomicfile.DirSyncError
	if errors.As(err, &dse) {
		// The new content is in place; only the directory entry's durability across a
		// power cut is in doubt. Saying the write failed would be wrong.
		req.Log.Warn("content replaced, directory not flushed", "path", t.canon, "err", dse.Err)
		return nil
	}
	return err
}

// removeStale deletes temp files that a killed write of this target left behind
// (`<name>.tmp.<16 hex>`), but only while the cross-process write lock is held: then
// every writer going through this plugin is excluded, so such a file cannot belong to
// a write still in progress. Without that lock they are left alone (they never make a
// later write fail: each write picks a new random name). docs/filesystem.md explains
// the choice.
func (t *target) removeStale(req *sdk.Request, dest string) {
	if t.lock == nil || !t.lock.shared {
		return
	}
	removed, err := atomicfile.RemoveStale(dest)
	if len(removed) > 0 {
		req.Log.Info("removed temp files left by an interrupted write", "path", t.canon, "count", len(removed))
	}
	if err != nil {
		req.Log.Warn("cannot remove stale temp files", "path", t.canon, "err", err)
	}
}

var errChanged = errors.New("target changed during the change")

// validated runs the shared path validation and answers upstream's error when it fails.
func validated(out *sdk.Output, raw, base string) (string, *sdk.Result) {
	canon, err := pathcheck.Validate(raw, base)
	if err != nil {
		r := out.Fail(msgNotAccessible)
		return "", &r
	}
	return canon, nil
}

// compileRegex applies the nested-quantifier guard and compiles pat; on failure the
// error row has been written.
func compileRegex(out *sdk.Output, pat string, caseInsensitive bool) (*regexp.Regexp, *sdk.Result) {
	if pattern.NestedQuantifiersTooLarge(pat) {
		r := out.Fail(msgNested)
		return nil, &r
	}
	re, err := pattern.Compile(pat, caseInsensitive)
	if err != nil {
		r := out.Fail("invalid regex: " + err.Error())
		return nil, &r
	}
	return re, nil
}

// ---- search ----

func searchDecl() []sdk.ActionOption {
	missing := "missing required parameters: path, pattern"
	return []sdk.ActionOption{
		sdk.Describe("Finds the lines of a text file of at most 100 MiB that contain a pattern or match a regular expression"),
		pathParam("path", "The file to search.", missing),
		sdk.Param("pattern", sdk.TypeString, "The text, or with regex true the regular expression, to find.",
			sdk.Required(), sdk.MaxLength(pattern.MaxPatternLen),
			sdk.Message(sdk.RuleRequired, missing),
			sdk.Message(sdk.RuleMaxLength, "pattern too long (max 256 chars)")),
		flagParam("regex", "true to read pattern as a regular expression.", "false"),
		flagParam("case_sensitive", "false to ignore ASCII case.", "true"),
		sdk.Param("max_matches", sdk.TypeInt32, "At most this many matching lines, 1 to 10000.",
			sdk.Default("100"), sdk.Minimum(1), sdk.Maximum(maxSearchMatches), sdk.Clamped()),
		baseDirParam(),
		sdk.Row("match", "line_number:int32", "content"),
		sdk.Row("warning", "message"),
		sdk.Row("total_matches", "total_matches:int32"),
		sdk.Columns("line_number:int32", "content", "total_matches:int32"),
		everywhere,
	}
}

// maxSearchMatches is the most matching lines search reports.
const maxSearchMatches = 10000

func search(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	p := req.Params
	path, pat, base := p.Get("path", ""), p.Get("pattern", ""), p.Get("base_dir", "")
	fold := !p.Bool("case_sensitive", true)
	canon, res := validated(out, path, base)
	if res != nil {
		return *res, nil
	}
	// The file is checked before the pattern, upstream's order.
	if res := statRegular(out, canon, maxTextFile); res != nil {
		return *res, nil
	}
	var s *pattern.Searcher
	if p.Bool("regex", false) {
		re, res := compileRegex(out, pat, fold)
		if res != nil {
			return *res, nil
		}
		s = pattern.NewRegexSearcher(re)
	} else {
		s = pattern.NewLiteralSearcher(pat, fold)
	}
	limit, _ := p.Int("max_matches", 100)
	limit = min(max(limit, 1), maxSearchMatches)

	t, res := openTarget(ctx, req, out, base, canon, os.O_RDONLY, maxTextFile, false, msgOpenFailed)
	if res != nil {
		return *res, nil
	}
	defer t.close()
	n, err := s.Search(ctx, io.LimitReader(t.f, maxTextFile), limit, func(m pattern.Match) error {
		line := strconv.Itoa(m.Line)
		out.Row("match", line, string(m.Text))
		if m.Truncated {
			// The row would otherwise look like the whole line. The line was matched
			// as a whole; only what is shown is cut.
			out.Row("warning", fmt.Sprintf("line %s is longer than %d bytes; its match row shows only the first %d bytes",
				line, pattern.DefaultBufferSize, pattern.DefaultBufferSize))
		}
		return out.Err()
	})
	timedOut := errors.Is(err, context.DeadlineExceeded) || (!req.Deadline.IsZero() && !time.Now().Before(req.Deadline))
	switch {
	case err != nil && ctx.Err() != nil && timedOut:
		return out.Fail("search timed out before the end of the file"), nil
	case err != nil && ctx.Err() != nil:
		return out.Fail("search cancelled before the end of the file"), nil
	case err != nil && out.Err() != nil:
		return sdk.Failed(), out.Err()
	case err != nil:
		req.Log.Debug("read failed", "path", canon, "err", err)
		return out.Fail("failed to read file"), nil
	}
	// A directory moved out of base_dir while it was read makes the answer untrustworthy.
	if err := pathcheck.CheckInside(t.f, base); err != nil {
		return out.Fail(msgNotAccessible), nil
	}
	out.Row("total_matches", strconv.Itoa(n))
	return sdk.Undeclared(), nil
}

// ---- replace ----

func replaceDecl() []sdk.ActionOption {
	missing := "missing required parameters: path, search"
	return []sdk.ActionOption{
		sdk.Describe("Replaces text in a file of at most 100 MiB and writes it back atomically; dry_run only counts"),
		pathParam("path", "The file to change.", missing),
		sdk.Param("search", sdk.TypeString, "The text, or with regex true the regular expression, to replace.",
			sdk.Required(), sdk.MaxLength(pattern.MaxPatternLen),
			sdk.Message(sdk.RuleRequired, missing),
			sdk.Message(sdk.RuleMaxLength, "pattern too long (max 256 chars)")),
		sdk.Param("replacement", sdk.TypeString, "What replaces each match; empty removes the matches.", sdk.Default("")),
		flagParam("regex", "true to read search as a regular expression.", "false"),
		flagParam("case_sensitive", "false to ignore ASCII case.", "true"),
		flagParam("dry_run", "true to count and report without writing.", "false"),
		sdk.Param("max_replacements", sdk.TypeInt32, "Replace at most this many matches; 0 means all.",
			sdk.Default("0"), sdk.Minimum(0)),
		baseDirParam(),
		sdk.Row("replacements_made", "replacements_made:int32"),
		sdk.Row("file_size_before", "file_size_before:int64"),
		sdk.Row("file_size_after", "file_size_after:int64"),
		sdk.Row("dry_run", "dry_run:bool"),
		everywhere,
	}
}

func replace(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	p := req.Params
	path, search, base := p.Get("path", ""), p.Get("search", ""), p.Get("base_dir", "")
	repl := p.Get("replacement", "")
	fold := !p.Bool("case_sensitive", true)
	dryRun := p.Bool("dry_run", false)
	limit, _ := p.Int("max_replacements", 0)
	canon, res := validated(out, path, base)
	if res != nil {
		return *res, nil
	}
	t, res := openTarget(ctx, req, out, base, canon, os.O_RDONLY, maxTextFile, !dryRun, msgOpenFailed)
	if res != nil {
		return *res, nil
	}
	defer t.close()
	var re *regexp.Regexp
	if p.Bool("regex", false) {
		if re, res = compileRegex(out, search, fold); res != nil {
			return *res, nil
		}
	}
	src, err := t.readAll()
	if err != nil {
		req.Log.Debug("read failed", "path", canon, "err", err)
		return out.Fail(msgOpenFailed), nil
	}
	var dst []byte
	var count int
	switch {
	case re != nil && limit == 0:
		dst, count, err = pattern.ReplaceAll(re, src, repl, pattern.DefaultMaxOutput)
	case re != nil:
		dst, count, err = pattern.ReplaceFirst(re, src, repl, limit, pattern.DefaultMaxOutput)
	default:
		dst, count, err = pattern.ReplaceLiteral(src, search, repl, fold, limit, pattern.DefaultMaxOutput)
	}
	if errors.Is(err, pattern.ErrOutputTooLarge) {
		return out.Failf("result too large (over %d bytes, max %d)", pattern.DefaultMaxOutput, maxTextFile), nil
	}
	if err != nil {
		return out.Fail("invalid regex: " + err.Error()), nil
	}
	if !dryRun && count > 0 && !bytes.Equal(src, dst) {
		if err := ctx.Err(); err != nil {
			return cancelled(req, out, err), nil
		}
		if err := t.commit(req, dst); err != nil {
			return commitFailed(req, out, canon, err), nil
		}
	}
	out.Row("replacements_made", strconv.Itoa(count))
	out.Row("file_size_before", strconv.Itoa(len(src)))
	out.Row("file_size_after", strconv.Itoa(len(dst)))
	if dryRun {
		out.Row("dry_run", "true")
	}
	return sdk.Undeclared(), nil
}

func commitFailed(req *sdk.Request, out *sdk.Output, canon string, err error) sdk.Result {
	req.Log.Debug("write failed", "path", canon, "err", err)
	if errors.Is(err, errChanged) {
		return out.Fail(msgChanged)
	}
	return out.Fail(msgWriteFailed)
}

// ---- write_content ----

func writeContentDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Writes content to a file: replaces an existing one atomically (overwrite) or creates a new one (create)"),
		pathParam("path", "The file to write.", "missing required parameter: path"),
		sdk.Param("content", sdk.TypeString, "What the file will hold; absent writes an empty file."),
		flagParam("create", "true to allow creating a new file.", "false"),
		flagParam("overwrite", "true to allow replacing an existing file.", "false"),
		baseDirParam(),
		sdk.Row("status", "status"),
		sdk.Row("bytes_written", "bytes_written:int64"),
		sdk.Row("path", "path"),
		everywhere,
	}
}

func writeContent(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	p := req.Params
	path, base, content := p.Get("path", ""), p.Get("base_dir", ""), p.Get("content", "")
	shown, err := pathcheck.Validate(path, base)
	exists := err == nil
	if !exists {
		// A path that appears after this check is refused by the exclusive create
		// below, never written through.
		if shown, err = pathcheck.ValidateOrParent(path, base); err != nil {
			return out.Fail(msgNotAccessible), nil
		}
	}
	switch {
	case !exists && !p.Bool("create", false):
		return out.Fail("file does not exist and create=false"), nil
	case exists && !p.Bool("overwrite", false):
		return out.Fail("file exists and overwrite=false"), nil
	case len(content) > maxTextFile:
		return out.Failf("content too large (%d bytes, max %d)", len(content), maxTextFile), nil
	}
	var written int
	var res *sdk.Result
	if exists {
		written, res = overwriteFile(ctx, req, out, base, shown, content)
	} else {
		written, res = createFile(ctx, req, out, base, path, content)
	}
	if res != nil {
		return *res, nil
	}
	out.Row("status", "ok")
	out.Row("bytes_written", strconv.Itoa(written))
	out.Row("path", shown)
	return sdk.Undeclared(), nil
}

// overwriteFile replaces the content of the existing file canon atomically. When the
// file already holds exactly content nothing is written and 0 bytes are reported.
func overwriteFile(ctx context.Context, req *sdk.Request, out *sdk.Output, base, canon, content string) (int, *sdk.Result) {
	t, res := openTarget(ctx, req, out, base, canon, os.O_RDONLY, 0, true, msgWriteFailed)
	if res != nil {
		return 0, res
	}
	defer t.close()
	if t.fi.Size() == int64(len(content)) {
		same, err := sameContent(t.f, content)
		if err == nil && same {
			return 0, nil
		}
	}
	if err := ctx.Err(); err != nil {
		r := cancelled(req, out, err)
		return 0, &r
	}
	if err := t.commit(req, []byte(content)); err != nil {
		r := commitFailed(req, out, canon, err)
		return 0, &r
	}
	return len(content), nil
}

// sameContent reports whether f, read from its start, holds exactly want.
func sameContent(f *os.File, want string) (bool, error) {
	buf := make([]byte, 64<<10)
	off := 0
	for {
		n, err := f.ReadAt(buf, int64(off))
		if n > 0 {
			if off+n > len(want) || string(buf[:n]) != want[off:off+n] {
				return false, nil
			}
			off += n
		}
		if errors.Is(err, io.EOF) {
			return off == len(want), nil
		}
		if err != nil {
			return false, err
		}
	}
}

// createFile creates the new file raw names, in its existing parent directory. The
// content is written to a temporary sibling first (created exclusively, without
// following a link, 0666 minus the umask), flushed, and only then given its name, by an
// operation that never replaces (publish): nobody, and no crash, ever sees a partial
// new file under that name, and an entry planted at the name meanwhile (a link to
// /etc/shadow, say) makes the write fail instead of being written through or replaced.
// On any failure the temporary file is removed.
func createFile(ctx context.Context, req *sdk.Request, out *sdk.Output, base, raw, content string) (int, *sdk.Result) {
	fail := func(msg string) (int, *sdk.Result) {
		r := out.Fail(msg)
		return 0, &r
	}
	newPath, err := pathcheck.ValidateNew(raw, base)
	if err != nil {
		return fail(msgNotAccessible)
	}
	hook("open", newPath)
	dir, err := pinDir(base, filepath.Dir(newPath), false)
	if err != nil {
		req.Log.Debug("cannot open the parent directory", "dir", filepath.Dir(newPath), "err", err)
		return fail("failed to create file")
	}
	defer dir.close()
	lock, err := lockDir(ctx, req, dir)
	if err != nil {
		r := cancelled(req, out, err)
		return 0, &r
	}
	defer lock.release()
	name := filepath.Base(newPath)
	tmp, err := atomicfile.TempName(name)
	if err != nil {
		return fail("failed to create file")
	}
	f, err := dir.create(tmp)
	if err != nil {
		req.Log.Debug("cannot create file", "path", newPath, "err", err)
		return fail("failed to create file")
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fail("failed to create file")
	}
	// Anything that goes wrong from here removes the temporary file again (if the
	// name still holds it), so a failed create leaves nothing behind.
	undo := func(msg string) (int, *sdk.Result) {
		f.Close()
		dir.removeIfSame(tmp, fi)
		return fail(msg)
	}
	hook("commit", newPath)
	if err := pathcheck.CheckInside(f, base); err != nil {
		return undo(msgChanged)
	}
	_, werr := io.WriteString(f, content)
	if werr == nil {
		werr = f.Sync()
	}
	if werr != nil {
		req.Log.Debug("write failed", "path", newPath, "err", werr)
		return undo("write failed")
	}
	if err := f.Close(); err != nil {
		req.Log.Debug("close failed", "path", newPath, "err", err)
		dir.removeIfSame(tmp, fi)
		return fail("write failed")
	}
	if err := dir.publish(tmp, name); err != nil {
		// Most often something is at the name already (a dangling link, or an
		// entry that appeared since the check): it is left alone.
		dir.removeIfSame(tmp, fi)
		req.Log.Debug("cannot give the new file its name", "path", newPath, "err", err)
		return fail("failed to create file")
	}
	dir.sync(req)
	return len(content), nil
}

// ---- append ----

func appendDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Appends content to an existing regular file and reports its size once the data reached the disk"),
		pathParam("path", "The file to append to.", "missing required parameter: path"),
		sdk.Param("content", sdk.TypeString, "What to append."),
		flagParam("newline", "true to start on a new line.", "true"),
		baseDirParam(),
		sdk.Row("status", "status"),
		sdk.Row("bytes_appended", "bytes_appended:int64"),
		sdk.Row("total_size", "total_size:int64"),
		everywhere,
	}
}

func appendAction(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	p := req.Params
	path, base, content := p.Get("path", ""), p.Get("base_dir", ""), p.Get("content", "")
	canon, res := validated(out, path, base)
	if res != nil {
		return *res, nil
	}
	// The write lock makes an append wait for a replace of the same file in progress
	// (which would otherwise rename its copy over the appended bytes), and the other
	// way round.
	t, res := openTarget(ctx, req, out, base, canon, os.O_RDWR|os.O_APPEND, 0, true, "failed to open file for append")
	if res != nil {
		return *res, nil
	}
	defer t.close()
	data := content
	if p.Bool("newline", true) && t.fi.Size() > 0 {
		var last [1]byte
		if _, err := t.f.ReadAt(last[:], t.fi.Size()-1); err != nil {
			req.Log.Debug("cannot read the last byte", "path", canon, "err", err)
			return out.Fail("append failed"), nil
		}
		if last[0] != '\n' {
			data = "\n" + content
		}
	}
	hook("commit", canon)
	if !t.dir.holds(filepath.Base(canon), t.f) {
		return out.Fail(msgChanged), nil
	}
	if err := pathcheck.CheckInside(t.f, base); err != nil {
		return out.Fail(msgChanged), nil
	}
	if data != "" {
		if err := ctx.Err(); err != nil {
			return cancelled(req, out, err), nil
		}
		_, err := io.WriteString(t.f, data)
		if err == nil {
			err = t.f.Sync()
		}
		if err != nil {
			req.Log.Debug("append failed", "path", canon, "err", err)
			return out.Fail("append failed"), nil
		}
	}
	// The size after the data reached the disk, read on the same descriptor.
	fi, err := t.f.Stat()
	if err != nil {
		return out.Fail("append failed"), nil
	}
	f := t.f
	t.f = nil
	if err := f.Close(); err != nil {
		req.Log.Debug("close failed", "path", canon, "err", err)
		return out.Fail("append failed"), nil
	}
	out.Row("status", "ok")
	out.Row("bytes_appended", strconv.Itoa(len(data)))
	out.Row("total_size", strconv.FormatInt(fi.Size(), 10))
	return sdk.Undeclared(), nil
}

// ---- delete_lines ----

func deleteLinesDecl() []sdk.ActionOption {
	missing := "missing required parameters: path, start_line, end_line"
	return []sdk.ActionOption{
		sdk.Describe("Deletes a range of lines of a file of at most 100 MiB and writes it back atomically"),
		pathParam("path", "The file to change.", missing),
		sdk.Param("start_line", sdk.TypeInt32, "1-based number of the first line to delete.",
			sdk.Required(), sdk.Minimum(1),
			sdk.Message(sdk.RuleRequired, missing), sdk.Message(sdk.RuleMinimum, msgBadRange)),
		sdk.Param("end_line", sdk.TypeInt32, "1-based number of the last line to delete.",
			sdk.Required(), sdk.Minimum(1),
			sdk.Message(sdk.RuleRequired, missing), sdk.Message(sdk.RuleMinimum, msgBadRange)),
		baseDirParam(),
		sdk.Row("lines_deleted", "lines_deleted:int32"),
		sdk.Row("total_lines_before", "total_lines_before:int32"),
		sdk.Row("total_lines_after", "total_lines_after:int32"),
		everywhere,
	}
}

const msgBadRange = "invalid line range (1-based, start <= end)"

func deleteLines(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	p := req.Params
	path, base := p.Get("path", ""), p.Get("base_dir", "")
	canon, res := validated(out, path, base)
	if res != nil {
		return *res, nil
	}
	// Upstream's order: the file, then the range, then the open.
	if res := statRegular(out, canon, maxTextFile); res != nil {
		return *res, nil
	}
	start, okS := p.Int("start_line", 0)
	end, okE := p.Int("end_line", 0)
	if !okS || !okE || start < 1 || end < start {
		return out.Fail(msgBadRange), nil
	}
	t, res := openTarget(ctx, req, out, base, canon, os.O_RDONLY, maxTextFile, true, msgOpenFailed)
	if res != nil {
		return *res, nil
	}
	defer t.close()
	src, err := t.readAll()
	if err != nil {
		req.Log.Debug("read failed", "path", canon, "err", err)
		return out.Fail(msgOpenFailed), nil
	}
	dst, deleted, before, ok := deleteLineRange(src, start, end)
	if !ok {
		return out.Fail("start_line beyond end of file"), nil
	}
	if err := ctx.Err(); err != nil {
		return cancelled(req, out, err), nil
	}
	if err := t.commit(req, dst); err != nil {
		return commitFailed(req, out, canon, err), nil
	}
	out.Row("lines_deleted", strconv.Itoa(deleted))
	out.Row("total_lines_before", strconv.Itoa(before))
	out.Row("total_lines_after", strconv.Itoa(before-deleted))
	return sdk.Undeclared(), nil
}

// deleteLineRange removes lines start..end (1-based, inclusive; end past the last line
// means the last line) from src, with read's line model: lines end at '\n', a final
// '\n' does not start another line, '\r' stays part of the line. What remains ends
// with '\n' unless nothing remains. ok is false when start is past the last line.
func deleteLineRange(src []byte, start, end int) (dst []byte, deleted, total int, ok bool) {
	// offsets[i] is where line i+1 starts; the scan stops once line end's end is known.
	total = bytes.Count(src, []byte{'\n'})
	if len(src) > 0 && src[len(src)-1] != '\n' {
		total++
	}
	if start > total {
		return nil, 0, total, false
	}
	end = min(end, total)
	from := lineStart(src, start)
	to := len(src)
	if end < total {
		to = lineStart(src, end+1)
	}
	dst = make([]byte, 0, len(src)-(to-from)+1)
	dst = append(dst, src[:from]...)
	dst = append(dst, src[to:]...)
	if len(dst) > 0 && dst[len(dst)-1] != '\n' {
		dst = append(dst, '\n')
	}
	return dst, end - start + 1, total, true
}

// lineStart returns the offset at which 1-based line n starts; n must not be past the
// last line.
func lineStart(src []byte, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		off += bytes.IndexByte(src[off:], '\n') + 1
	}
	return off
}

// ---- write lock ----

// lockBuckets is how many locks the directories written to are spread over. Two
// directories that share a bucket merely wait for each other now and then; a fixed
// number keeps the lock files from piling up.
const lockBuckets = 64

// localLocks serialise the writers of one bucket inside this process. A buffered
// channel is a mutex that a waiter can give up on when its command ends.
var localLocks = func() (l [lockBuckets]chan struct{}) {
	for i := range l {
		l[i] = make(chan struct{}, 1)
	}
	return l
}()

// writeLock is held by one change while it reads and rewrites a file.
type writeLock struct {
	bucket int
	// file is the cross-process lock file, nil when none could be used.
	file *os.File
	// shared is set when the cross-process lock is held: every writer going through
	// this plugin, in any agent process sharing the data directory, is excluded.
	shared bool
}

// lockDir takes the write lock of the pinned directory d: first the in-process
// bucket, then the bucket's lock file under <data dir>/filesystem/write-locks, which
// only the agent's user can open, so no other local user can hold it and stall the
// agent's writes. Without a data directory (or when the lock file cannot be used) only
// the in-process lock is taken, and the change goes ahead without removing stale temp
// files. It fails only when ctx ends while waiting.
func lockDir(ctx context.Context, req *sdk.Request, d *pinnedDir) (*writeLock, error) {
	l := &writeLock{bucket: int(d.key() % lockBuckets)}
	select {
	case localLocks[l.bucket] <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f, err := openLockFile(req.Config.DataDir, l.bucket)
	if err != nil {
		if req.Config.DataDir != "" {
			req.Log.Warn("no cross-process write lock; stale temp files are kept", "err", err)
		}
		return l, nil
	}
	// Wait polls rather than blocks, so the command's deadline ends the wait; any
	// other failure leaves the change with the in-process lock alone, as above.
	if err := filelock.Wait(ctx, f); err != nil {
		f.Close()
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			<-localLocks[l.bucket]
			return nil, ctxErr
		}
		req.Log.Warn("no cross-process write lock; stale temp files are kept", "err", err)
		return l, nil
	}
	l.file, l.shared = f, true
	return l, nil
}

func (l *writeLock) release() {
	if l.file != nil {
		// Closing drops the lock too, so an unlock error changes nothing for the
		// next holder.
		_ = filelock.Unlock(l.file)
		l.file.Close()
		l.file = nil
	}
	<-localLocks[l.bucket]
}

// openLockFile opens (creating when missing) the lock file of bucket. The directory is
// made 0700 and must be owned by root or the agent's user and writable by no one
// else.
func openLockFile(dataDir string, bucket int) (*os.File, error) {
	if dataDir == "" {
		return nil, errors.New("no data directory")
	}
	dir := filepath.Join(dataDir, "filesystem", "write-locks")
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if err := safefile.Trusted(fi, false); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return os.OpenFile(filepath.Join(dir, fmt.Sprintf("%02x", bucket)), os.O_RDWR|os.O_CREATE|noFollow, 0o600)
}
