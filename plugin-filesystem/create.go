package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// Defaults of create_temp and create_temp_dir. An empty prefix or suffix also falls
// back to them, as upstream.
const (
	defaultTempPrefix = "yuzu-"
	defaultTempSuffix = ".tmp"
)

// tempAttempts bounds how many random names are tried before giving up. A clash of
// six random alphanumeric characters is rare; many clashes in a row mean someone is
// filling the directory on purpose, and trying forever would hang the command.
const tempAttempts = 100

// errTempExists is what the per-system creators return when the name is taken, so the
// caller tries another.
var errTempExists = errors.New("temporary name already exists")

func createTempDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Creates an empty temporary file only its owner can read (0600), and removes it again unless persist is true"),
		sdk.Param("prefix", sdk.TypeString, "Start of the file name.", sdk.Default(defaultTempPrefix), sdk.MaxLength(64)),
		sdk.Param("suffix", sdk.TypeString, "End of the file name.", sdk.Default(defaultTempSuffix), sdk.MaxLength(32)),
		sdk.Param("directory", sdk.TypeString, "Where to create it; the system's temporary directory when absent.",
			sdk.MaxLength(maxPathBytes)),
		flagParam("persist", "false to delete the file again at once.", "true"),
		sdk.Row("path", "path"),
		sdk.Row("persist", "persist:bool"),
		sdk.Row("cleanup", "cleanup"),
		sdk.Columns("path", "persist:bool"),
		everywhere,
	}
}

func createTemp(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	return makeTemp(ctx, req, out, false)
}

func createTempDirDecl() []sdk.ActionOption {
	return []sdk.ActionOption{
		sdk.Describe("Creates an empty temporary directory only its owner can enter (0700), and removes it again unless persist is true"),
		sdk.Param("prefix", sdk.TypeString, "Start of the directory name.", sdk.Default(defaultTempPrefix), sdk.MaxLength(64)),
		sdk.Param("directory", sdk.TypeString, "Where to create it; the system's temporary directory when absent.",
			sdk.MaxLength(maxPathBytes)),
		flagParam("persist", "false to delete the directory again at once.", "true"),
		sdk.Row("path", "path"),
		sdk.Row("persist", "persist:bool"),
		sdk.Row("cleanup", "cleanup"),
		sdk.Columns("path", "persist:bool"),
		everywhere,
	}
}

func createTempDir(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	return makeTemp(ctx, req, out, true)
}

// makeTemp is create_temp (dir false) and create_temp_dir (dir true).
func makeTemp(ctx context.Context, req *sdk.Request, out *sdk.Output, dir bool) (sdk.Result, error) {
	what := "temporary file"
	if dir {
		what = "temporary directory"
	}
	failed := "failed to create " + what
	prefix := req.Params.Get("prefix", defaultTempPrefix)
	if prefix == "" {
		prefix = defaultTempPrefix
	}
	suffix := ""
	if !dir {
		if suffix = req.Params.Get("suffix", defaultTempSuffix); suffix == "" {
			suffix = defaultTempSuffix
		}
	}
	// Upstream pastes prefix and suffix into the path unchecked, so "../" in either
	// created the file somewhere else entirely; here they must stay one name.
	if hasSeparator(prefix) || hasSeparator(suffix) {
		return out.Fail("prefix and suffix must not contain a path separator"), nil
	}

	// The path reported keeps the directory as the caller (or the environment) spelt
	// it, as upstream. The directory is resolved once and held open, and the entry is
	// created beneath that descriptor, so a directory swapped for a link meanwhile
	// cannot redirect it; a link on the way is followed only where no user but root
	// and the agent's user can have chosen it (docs/filesystem.md, "create_temp").
	shown, given := req.Params.Lookup("directory")
	if !given || shown == "" {
		shown = systemTempDir()
		given = false
	}
	d, err := pathcheck.OpenDir(shown)
	var ue *pathcheck.UntrustedError
	switch {
	case err == nil:
		defer d.Close()
	case !given:
		req.Log.Debug("temporary directory not usable", "dir", shown, "err", err)
		return out.Fail(failed), nil
	case errors.As(err, &ue):
		return out.Fail("directory refused: " + ue.Error()), nil
	case errors.Is(err, pathcheck.ErrNotDir):
		return out.Fail("specified directory is not a directory"), nil
	default:
		return out.Fail("directory does not exist or is not accessible"), nil
	}
	canonDir := d.Path()

	var created, shownPath string
	for range tempAttempts {
		if err := ctx.Err(); err != nil {
			return out.Fail(failed), nil
		}
		name, err := tempName(prefix, suffix)
		if err != nil {
			return out.Fail(failed), nil
		}
		shownPath = joinShown(shown, name)
		if !tempPathFits(shownPath) {
			req.Log.Debug("temporary path too long", "path", shownPath)
			return out.Fail(failed), nil
		}
		created, err = createTempEntry(d, name, dir)
		if errors.Is(err, errTempExists) {
			continue
		}
		if err != nil {
			req.Log.Debug("cannot create temporary entry", "dir", canonDir, "err", err)
			return out.Fail(failed), nil
		}
		break
	}
	if created == "" {
		req.Log.Warn("no free temporary name", "dir", canonDir, "attempts", tempAttempts)
		return out.Fail(failed), nil
	}

	persist := req.Params.Get("persist", "true")
	out.Row("path", shownPath)
	out.Row("persist", persist)
	if persist != "true" {
		if err := removeTempEntry(d, filepath.Base(created), dir); err != nil {
			req.Log.Warn("cannot delete temporary entry", "path", created, "err", err)
			return out.Fail("failed to delete " + what), nil
		}
		out.Row("cleanup", "deleted")
	}
	return sdk.Done(), nil
}

// systemTempDir is the directory upstream's host uses when none is given: on POSIX
// the first of TMPDIR, TMP, TEMP and TEMPDIR that is set, else /tmp; on Windows the
// system's temporary path.
func systemTempDir() string {
	if runtime.GOOS == "windows" {
		return os.TempDir()
	}
	for _, k := range []string{"TMPDIR", "TMP", "TEMP", "TEMPDIR"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "/tmp"
}

// joinShown joins the directory as given and the new name the way upstream prints
// them: POSIX always adds "/" (so a TMPDIR ending in "/" shows "//", as the macOS
// sample does); Windows adds `\` only when the directory does not end in a separator.
func joinShown(dir, name string) string {
	if runtime.GOOS == "windows" {
		if strings.HasSuffix(dir, `\`) || strings.HasSuffix(dir, "/") {
			return dir + name
		}
		return dir + `\` + name
	}
	return dir + "/" + name
}

func hasSeparator(s string) bool {
	if strings.ContainsRune(s, '/') || strings.IndexByte(s, 0) >= 0 {
		return true
	}
	return runtime.GOOS == "windows" && strings.ContainsAny(s, `\:`)
}
