package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pattern"
)

// The look actions: exists, list_dir, read and search_dir. Their rows, errors and
// limits are described in docs/filesystem.md.

// listDirCap is the most entries list_dir reports, as upstream.
const listDirCap = 1000

// dirBatch bounds how many directory entries are held in memory at once.
const dirBatch = 256

// ---- exists ----

func existsDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Says whether a path exists (following symbolic links) and, when it does, its type and a file's size"),
		pathParam("path", "The path to look at.", "missing required parameter: path"),
		baseDirParam(),
		sdk.Row("exists", "exists:bool"),
		sdk.Row("type", "type"),
		sdk.Row("size", "size:int64"),
		everywhere,
	}
}

func exists(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	raw := req.Params.Get("path", "")
	base := req.Params.Get("base_dir", "")
	if strings.IndexByte(raw, 0) >= 0 || strings.IndexByte(base, 0) >= 0 {
		// Upstream would hand the bytes before the NUL to the system and answer
		// about another path; no such path can exist.
		return out.Fail("path contains a NUL byte"), nil
	}
	target, err := pathcheck.ValidateOrParent(raw, base)
	if err != nil {
		if base != "" {
			return out.Fail("path is outside allowed base directory"), nil
		}
		// Without base_dir upstream ignores a failed validation and asks about the
		// path as given.
		target = raw
	}
	if _, err := os.Stat(target); err != nil {
		out.Row("exists", "false")
		return sdk.Undeclared(), nil
	}
	out.Row("exists", "true")
	canon, err := pathcheck.Validate(raw, base)
	if err != nil {
		if base != "" {
			return out.Fail("path resolves outside allowed base directory"), nil
		}
		canon = target
	}
	var fi fs.FileInfo
	if base != "" {
		// Look at the file without following a link swapped in since the
		// validation, so nothing outside base_dir is described.
		fi, err = statIn(base, canon)
		if err != nil && isSwap(err) {
			return out.Fail("path resolves outside allowed base directory"), nil
		}
	} else {
		fi, err = os.Stat(canon)
	}
	switch {
	case err != nil:
		// It existed a moment ago; upstream reports a failed size call as 0.
		out.Row("type", "other")
		out.Row("size", "0")
	case fi.Mode().IsRegular():
		out.Row("type", "file")
		out.Row("size", strconv.FormatInt(fi.Size(), 10))
	case fi.IsDir():
		out.Row("type", "directory")
		out.Row("size", "0")
	default:
		out.Row("type", "other")
		out.Row("size", "0")
	}
	return sdk.Undeclared(), nil
}

// isSwap reports whether an open failed because the path no longer leads where it
// was validated to lead: a link appeared on it, or it left the base directory.
func isSwap(err error) bool {
	return errors.Is(err, pathcheck.ErrSymlink) || errors.Is(err, pathcheck.ErrOutside) ||
		errors.Is(err, pathcheck.ErrChanged) || errors.Is(err, pathcheck.ErrNotCanonical) ||
		errors.Is(err, pathcheck.ErrBaseDir)
}

// ---- list_dir ----

func listDirDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Lists the entries of one directory with their type and size, at most 1000"),
		pathParam("path", "The directory to list.", "missing required parameter: path"),
		baseDirParam(),
		sdk.Row("entry", "entry_name", "entry_type", "entry_size:int64"),
		sdk.Row("warning", "message"),
		sdk.Columns("entry_name", "entry_type", "entry_size:int64"),
		everywhere,
	}
}

func listDir(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	base := req.Params.Get("base_dir", "")
	canon, res := validated(out, req.Params.Get("path", ""), base)
	if res != nil {
		return *res, nil
	}
	const notDir = "path is not a directory or does not exist"
	if fi, err := os.Stat(canon); err != nil || !fi.IsDir() {
		return out.Fail(notDir), nil
	}
	d, err := pathcheck.OpenIn(base, canon, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		if isSwap(err) {
			return out.Fail(msgNotAccessible), nil
		}
		// Upstream has no wording for a directory it may not list.
		return out.Fail("failed to open directory"), nil
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		return out.Fail(notDir), nil
	}
	lt := newLinkTyper(base)
	n := 0
	for n < listDirCap {
		if err := ctx.Err(); err != nil {
			return out.Fail("list_dir stopped: " + err.Error()), nil
		}
		batch, err := d.ReadDir(min(dirBatch, listDirCap-n))
		for _, e := range batch {
			kind, size, ok := lt.entryType(filepath.Join(canon, e.Name()), e)
			if !ok {
				continue // gone since it was listed
			}
			out.Row("entry", e.Name(), kind, strconv.FormatInt(size, 10))
			n++
		}
		if err != nil || len(batch) == 0 {
			break
		}
	}
	if n >= listDirCap {
		out.Row("warning", "output truncated at 1000 entries")
	}
	return sdk.Undeclared(), nil
}

// linkTyper types directory entries the way upstream does, following symbolic
// links, except that with a base directory a link whose target lies outside it is
// not followed: its target is not looked at, and it reads as a link.
type linkTyper struct {
	base string // canonical base directory, or ""
}

func newLinkTyper(base string) linkTyper {
	if base == "" {
		return linkTyper{}
	}
	canon, err := pathcheck.Validate(base, "")
	if err != nil {
		// Validation of the path itself has just succeeded against this base, so
		// this only happens if the base vanished meanwhile: follow nothing.
		return linkTyper{base: string(filepath.Separator) + "\x00"}
	}
	return linkTyper{base: canon}
}

// follow stats p's target, or reports false when p is a link that leads outside the
// base directory (or nowhere).
func (lt linkTyper) follow(p string) (fs.FileInfo, bool) {
	if lt.base != "" {
		t, err := filepath.EvalSymlinks(p)
		if err != nil || !pathcheck.Contains(lt.base, t) {
			return nil, false
		}
		p = t
	}
	fi, err := os.Stat(p)
	return fi, err == nil
}

// entryType returns list_dir's type and size of the entry e at path p. ok is false
// when the entry vanished since it was listed.
func (lt linkTyper) entryType(p string, e fs.DirEntry) (kind string, size int64, ok bool) {
	if e.Type()&fs.ModeSymlink != 0 {
		fi, ok := lt.follow(p)
		switch {
		case ok && fi.Mode().IsRegular():
			return "file", fi.Size(), true
		case ok && fi.IsDir():
			return "directory", 0, true
		}
		return "symlink", 0, true
	}
	switch {
	case e.IsDir():
		return "directory", 0, true
	case e.Type().IsRegular():
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, false
		}
		if err != nil || !fi.Mode().IsRegular() {
			return "file", 0, true
		}
		return "file", fi.Size(), true
	}
	return "other", 0, true
}

// isDirOrFile says what an entry is for search_dir's match_type filter, following a
// link as entryType does.
func (lt linkTyper) isDirOrFile(p string, e fs.DirEntry) (dir, file bool) {
	if e.Type()&fs.ModeSymlink != 0 {
		fi, ok := lt.follow(p)
		if !ok {
			return false, false
		}
		return fi.IsDir(), fi.Mode().IsRegular()
	}
	return e.IsDir(), e.Type().IsRegular()
}

// ---- read ----

func readDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Returns a page of lines of a text file of at most 100 MiB, with its total line count and size"),
		pathParam("path", "The file to read.", "missing required parameter: path"),
		sdk.Param("offset", sdk.TypeInt32, "1-based number of the first line returned.",
			sdk.Default("1"), sdk.Minimum(1), sdk.Clamped()),
		sdk.Param("limit", sdk.TypeInt32, "How many lines to return, 1 to 10000.",
			sdk.Default("100"), sdk.Minimum(1), sdk.Maximum(10000), sdk.Clamped()),
		baseDirParam(),
		sdk.Row("line", "line_number:int32", "content"),
		sdk.Row("warning", "message"),
		sdk.Row("total_lines", "total_lines:int32"),
		sdk.Row("file_size", "file_size:int64"),
		sdk.Columns("line_number:int32", "content", "total_lines:int32", "file_size:int64"),
		everywhere,
	}
}

// readMaxLimit is the largest page read returns.
const readMaxLimit = 10000

// binaryProbe is how many leading bytes read checks for a NUL.
const binaryProbe = 512

func read(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	base := req.Params.Get("base_dir", "")
	canon, res := validated(out, req.Params.Get("path", ""), base)
	if res != nil {
		return *res, nil
	}
	fi, err := os.Stat(canon)
	if err != nil || !fi.Mode().IsRegular() {
		return out.Fail(msgNotRegular), nil
	}
	if fi.Size() > maxTextFile {
		return out.Fail(tooLarge(fi.Size())), nil
	}
	offset, _ := req.Params.Int("offset", 1)
	offset = max(offset, 1)
	limit, _ := req.Params.Int("limit", 100)
	limit = min(max(limit, 1), readMaxLimit)

	f, now, failed := openRegular(out, base, canon, fi, maxTextFile)
	if f == nil {
		return failed, nil
	}
	defer f.Close()
	size := now.Size()

	// The file may grow while it is read; it is read to its end, but never past
	// the cap the size check promised.
	r := io.LimitReader(f, maxTextFile)
	head := make([]byte, binaryProbe)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return out.Fail(msgOpenFailed), nil
	}
	head = head[:n]
	if strings.IndexByte(string(head), 0) >= 0 {
		return out.Fail("file appears to be binary"), nil
	}
	total, err := pageLines(ctx, io.MultiReader(strings.NewReader(string(head)), r), offset, limit,
		func(line int, text []byte, cut bool) {
			out.Row("line", strconv.Itoa(line), string(text))
			if cut {
				out.Row("warning", "line "+strconv.Itoa(line)+" truncated to its first "+
					strconv.Itoa(maxLineBytes)+" bytes")
			}
		})
	if err != nil {
		if ctx.Err() != nil {
			return out.Fail("read stopped: " + ctx.Err().Error()), nil
		}
		return out.Fail("failed to read file"), nil
	}
	out.Row("total_lines", strconv.Itoa(total))
	out.Row("file_size", strconv.FormatInt(size, 10))
	return sdk.Undeclared(), nil
}

// openRegular opens canon, which a stat has just shown to be the regular file fi of
// at most limit bytes, without following links and without blocking, and checks
// on the open descriptor that it is still that file, whose stat it returns. On failure
// the error row has been written and the file is nil.
func openRegular(out *sdk.Output, base, canon string, fi fs.FileInfo, limit int64) (*os.File, fs.FileInfo, sdk.Result) {
	f, err := openForRead(base, canon)
	if err != nil {
		if isSwap(err) {
			return nil, nil, out.Fail(msgNotAccessible)
		}
		return nil, nil, out.Fail(msgOpenFailed)
	}
	now, err := f.Stat()
	if err != nil || !now.Mode().IsRegular() || !os.SameFile(fi, now) {
		f.Close()
		return nil, nil, out.Fail(msgNotAccessible)
	}
	if now.Size() > limit {
		f.Close()
		return nil, nil, out.Fail(tooLarge(now.Size()))
	}
	return f, now, sdk.Undeclared()
}

// ---- search_dir ----

func searchDirDecl() []sdk.ActionOption {
	missing := "missing required parameters: root, pattern"
	return []sdk.ActionOption{
		sdk.Describe("Finds entries below root whose name matches a glob or a regular expression"),
		pathParam("root", "The directory to search under.", missing),
		sdk.Param("pattern", sdk.TypeString,
			"A glob (*, ?, [a-z], [!x]) or, with regex true, a regular expression the whole name must match.",
			sdk.Required(), sdk.MaxLength(pattern.MaxPatternLen),
			sdk.Message(sdk.RuleRequired, missing),
			sdk.Message(sdk.RuleMaxLength, "pattern too long (max 256 chars)")),
		flagParam("regex", "true to read pattern as a regular expression.", "false"),
		sdk.Param("match_type", sdk.TypeString, "directories, files or both.",
			sdk.Default("directories"), sdk.Enum("directories", "files", "both")),
		sdk.Param("max_depth", sdk.TypeInt32, "How many levels to descend, 1 to 20.",
			sdk.Default("5"), sdk.Minimum(1), sdk.Maximum(20), sdk.Clamped()),
		sdk.Param("max_results", sdk.TypeInt32, "At most this many matches, 1 to 1000.",
			sdk.Default("100"), sdk.Minimum(1), sdk.Maximum(1000), sdk.Clamped()),
		baseDirParam(),
		sdk.Row("result", "path", "entry_type"),
		sdk.Row("total_matches", "total_matches:int32"),
		everywhere,
	}
}

func searchDir(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	base := req.Params.Get("base_dir", "")
	root, err := pathcheck.Validate(req.Params.Get("root", ""), base)
	if err != nil {
		return out.Fail("root is not accessible or outside allowed base directory"), nil
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return out.Fail("root is not a directory"), nil
	}
	pat := req.Params.Get("pattern", "")
	match := func(name string) bool { return pattern.GlobMatch(pat, name) }
	if req.Params.Bool("regex", false) {
		if pattern.NestedQuantifiersTooLarge(pat) {
			return out.Fail("regex contains nested quantifiers (potential ReDoS)"), nil
		}
		re, err := pattern.CompileName(pat)
		if err != nil {
			return out.Fail("invalid regex: " + err.Error()), nil
		}
		match = pattern.NewMatcher(re).MatchString
	}
	maxDepth, _ := req.Params.Int("max_depth", 5)
	maxDepth = min(max(maxDepth, 1), 20)
	maxResults, _ := req.Params.Int("max_results", 100)
	maxResults = min(max(maxResults, 1), 1000)
	wantDirs, wantFiles := true, false
	switch req.Params.Get("match_type", "directories") {
	case "files":
		wantDirs, wantFiles = false, true
	case "both":
		wantFiles = true
	}

	w := nameWalk{base: base, root: root, maxDepth: maxDepth, lt: newLinkTyper(base)}
	found := 0
	err = w.run(ctx, func(p string, e fs.DirEntry) bool {
		if !match(e.Name()) {
			return true
		}
		dir, file := w.lt.isDirOrFile(p, e)
		switch {
		case dir && wantDirs:
			out.Row("result", p, "directory")
		case file && wantFiles:
			out.Row("result", p, "file")
		default:
			return true
		}
		found++
		return found < maxResults
	})
	if err != nil {
		return out.Fail("search_dir stopped: " + err.Error()), nil
	}
	out.Row("total_matches", strconv.Itoa(found))
	return sdk.Undeclared(), nil
}

// nameWalk is search_dir's walk: depth first, each directory's entries in the order
// the system lists them, a directory's own entries right after it. A directory that
// cannot be opened or listed (permissions, vanished) is skipped; a link to a
// directory is reported but never entered.
//
// Depth is counted as upstream counts it, on the path text: the separators in an
// entry's path minus those in the root's. A root that ends in a separator ("/",
// `C:\`) therefore gives its entries depth 0 and reaches one level further. Entries
// deeper than maxDepth are skipped, so a directory at maxDepth is not opened.
type nameWalk struct {
	base     string
	root     string
	maxDepth int
	lt       linkTyper
}

type nameFrame struct {
	f     *os.File
	path  string
	depth int
	batch []fs.DirEntry
	done  bool
}

// run calls visit for every entry within maxDepth until visit returns false or the
// walk ends. The error is ctx's when it ended first.
func (w nameWalk) run(ctx context.Context, visit func(p string, e fs.DirEntry) bool) error {
	sep := string(filepath.Separator)
	rootSeps := strings.Count(w.root, sep)
	f, err := openDir(w.base, w.root)
	if err != nil {
		return nil
	}
	stack := []*nameFrame{{f: f, path: w.root, depth: 0}}
	defer func() {
		for _, fr := range stack {
			fr.f.Close()
		}
	}()
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := stack[len(stack)-1]
		if len(top.batch) == 0 {
			if !top.done {
				var err error
				top.batch, err = top.f.ReadDir(dirBatch)
				top.done = err != nil
			}
			if len(top.batch) == 0 {
				top.f.Close()
				stack = stack[:len(stack)-1]
				continue
			}
		}
		e := top.batch[0]
		top.batch = top.batch[1:]
		p := joinEntry(top.path, e.Name())
		depth := strings.Count(p, sep) - rootSeps
		if depth > w.maxDepth {
			continue
		}
		if !visit(p, e) {
			return nil
		}
		if !e.IsDir() || depth >= w.maxDepth {
			continue
		}
		if sub, err := openDir(w.base, p); err == nil {
			stack = append(stack, &nameFrame{f: sub, path: p, depth: depth})
		}
	}
	return nil
}

// joinEntry appends a name to a canonical directory path without cleaning it, so a
// root such as "/" keeps the spelling the depth count relies on.
func joinEntry(dir, name string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

// openDir opens a directory of a walk without following any link on its path.
func openDir(base, p string) (*os.File, error) {
	f, err := pathcheck.OpenIn(base, p, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		return nil, errors.New("not a directory")
	}
	return f, nil
}
