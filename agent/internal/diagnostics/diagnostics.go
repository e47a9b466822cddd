// Package diagnostics gathers the support bundle of `yuzu-agent diagnostics`: what a
// support engineer asks for first, in one tar.gz, with every secret left out.
package diagnostics

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/agent/internal/service"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// `yuzu-agent diagnostics` writes what a support engineer asks for first into one
// tar.gz (docs/operations.md, "Diagnostics"): versions, the configuration with its
// secrets redacted, the running agent's status, the plugin dir, the last log lines and
// a summary of the command journal. It reads every file as one that someone else may
// have planted (no link followed, regular files only, bounded), never reads key
// material (it names the TLS files, never opens them), and never includes the
// journal's contents: those are commands and their parameters.

// Input is what the bundle describes; the command line gathers it from the agent's
// configuration.
type Input struct {
	// Version and Commit are the agent's.
	Version, Commit string
	// ConfigFile is the configuration file's path, "" for none; Config is every
	// setting as `config show` prints it, its secrets already replaced.
	ConfigFile, Config string
	// Status returns the running agent's status report, or why there is none.
	Status func(ctx context.Context) string
	// PluginDir is listed with its catalog; JournalDir is listed (never read: its
	// files are commands and their parameters).
	PluginDir, JournalDir string
	// LogFile is the agent's --log-file, "" when it logs to stderr.
	LogFile string
	// Identity and CertsDir describe the client certificate run would present and
	// the enrolled identity's files.
	Identity identity.Files
	CertsDir string
	// Secrets are replaced wherever they appear in the bundle.
	Secrets []string
}

// Redacted stands for a secret left out.
const Redacted = "<redacted>"

// Bounds of what the bundle takes from the machine.
const (
	diagLogBytes  = 1 << 20
	diagLogLines  = 2000
	diagSumsBytes = 1 << 20
	diagListMax   = 10000
	diagToolWait  = 20 * time.Second
)

// Dir is the directory every bundle entry is under.
const Dir = "yuzu-diagnostics"

type diagFile struct {
	name string
	text string
}

// Write writes the bundle to out (written whole or not at all, readable by its owner
// only: it describes the machine's agent in detail) and returns its size.
func Write(ctx context.Context, in Input, out string) (int, error) {
	b, err := bundle(collect(ctx, in), time.Now())
	if err != nil {
		return 0, err
	}
	if err := atomicfile.WriteMode(out, b, 0o600); err != nil {
		var syncErr *atomicfile.DirSyncError
		if !errors.As(err, &syncErr) {
			return 0, err
		}
	}
	return len(b), nil
}

// collect gathers the bundle's files, each secret replaced wherever it appears.
func collect(ctx context.Context, in Input) []diagFile {
	var files []diagFile
	add := func(name, text string) { files = append(files, diagFile{name, text}) }

	add("version.txt", diagVersion(in.Version, in.Commit))
	var cb strings.Builder
	if in.ConfigFile != "" {
		fmt.Fprintf(&cb, "configuration file: %s\n", rows.Printable(in.ConfigFile))
	} else {
		cb.WriteString("configuration file: none\n")
	}
	cb.WriteString(in.Config)
	add("config.txt", cb.String())
	add("status.txt", in.Status(ctx))
	add("plugins.txt", diagPlugins(in.PluginDir))
	add("log.txt", redactValues(diagLog(ctx, in.LogFile)))
	add("journal.txt", diagListing(in.JournalDir))
	add("certificate.txt", diagCertificate(in.Identity, in.CertsDir))
	for i := range files {
		files[i].text = redact(files[i].text, in.Secrets)
	}
	return files
}

// auditValues finds the parameter values a debug-level command line carries (the
// dispatcher's `values` field, in the text and the JSON log format): a file's new
// content or a tag's value may be a secret, and the bundle is made to be handed over.
var auditValues = regexp.MustCompile(`(\bvalues=|"values":)"(?:[^"\\]|\\.)*"`)

// redactValues replaces every command's parameter values in log text.
func redactValues(text string) string {
	return auditValues.ReplaceAllString(text, `${1}"`+Redacted+`"`)
}

// diagCertificate describes the client certificate run would present, what is wrong
// with it, and the files of the enrolled identity (names and sizes: the key is never
// read into the bundle).
func diagCertificate(files identity.Files, certsDir string) string {
	var b strings.Builder
	src := identity.New(files, certsDir)
	now := time.Now()
	switch leaf, ok, err := src.Current(); {
	case err != nil:
		fmt.Fprintf(&b, "certificate: %s\n", rows.Printable(err.Error()))
	case ok:
		fmt.Fprintf(&b, "certificate: %s\n", rows.Printable(identity.Describe(leaf, now)))
		if p := leaf.Problem(now); p != "" {
			fmt.Fprintf(&b, "problem: %s\n", rows.Printable(p))
		}
	default:
		b.WriteString("certificate: none (run enrolls for one)\n")
	}
	b.WriteString(diagListing(certsDir))
	return b.String()
}

// redact replaces every secret in text.
func redact(text string, secrets []string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, Redacted)
		}
	}
	return text
}

func diagVersion(version, commit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "yuzu-agent %s (commit %s)\n", version, commit)
	fmt.Fprintf(&b, "go %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			fmt.Fprintf(&b, "module %s %s\n", d.Path, d.Version)
		}
	}
	if runtime.GOOS == "linux" {
		if k, err := safefile.ReadFile("/proc/sys/kernel/osrelease", 256); err == nil {
			fmt.Fprintf(&b, "kernel %s\n", rows.Printable(strings.TrimSpace(string(k))))
		}
	}
	return b.String()
}

// diagPlugins lists the plugin dir (names, modes, sizes; links are named, not
// followed) and its catalog (no secret in it: checksums, versions, signatures).
func diagPlugins(dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plugin dir: %s\n", rows.Printable(dir))
	b.WriteString(diagListing(dir))
	cat, err := safefile.ReadFile(trust.Path(dir), diagSumsBytes)
	if err != nil {
		fmt.Fprintf(&b, "\n%s: %s\n", trust.FileName, rows.Printable(err.Error()))
	} else {
		b.WriteString("\n" + trust.FileName + ":\n")
		for _, line := range strings.Split(strings.TrimRight(string(cat), "\n"), "\n") {
			b.WriteString(rows.Printable(line) + "\n")
		}
	}
	return b.String()
}

// diagListing lists a directory tree's entries, at most diagListMax, without
// following links: name, kind and mode, size, modification time.
func diagListing(dir string) string {
	var b strings.Builder
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s: %s\n", rows.Printable(path), rows.Printable(err.Error()))
			return nil
		}
		if n++; n > diagListMax {
			return fs.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s\t%s\t%d\t%s\n", rows.Printable(rel), fi.Mode(), fi.Size(), fi.ModTime().UTC().Format(time.RFC3339))
		return nil
	})
	if err != nil {
		fmt.Fprintf(&b, "%s\n", rows.Printable(err.Error()))
	}
	if n > diagListMax {
		fmt.Fprintf(&b, "(listing stopped after %d entries)\n", diagListMax)
	}
	return b.String()
}

// diagLog is the agent's last log lines: the end of --log-file, else, on a systemd
// host, the journal's lines of the agent's unit.
func diagLog(ctx context.Context, logFile string) string {
	if logFile != "" {
		return tailFile(logFile, diagLogBytes, diagLogLines)
	}
	const journalctl = "/usr/bin/journalctl"
	if runtime.GOOS != "linux" {
		return "no --log-file: the logs went to stderr\n"
	}
	if _, err := os.Stat(journalctl); err != nil {
		return "no --log-file and no journalctl: the logs went to stderr\n"
	}
	res, err := subprocess.Run(ctx, subprocess.Spec{
		Argv:      []string{journalctl, "--unit", service.Name + ".service", "--lines", fmt.Sprint(diagLogLines), "--no-pager", "--output", "short-iso"},
		Timeout:   diagToolWait,
		MaxOutput: diagLogBytes,
	})
	if err != nil {
		return fmt.Sprintf("journalctl: %s\n", rows.Printable(err.Error()))
	}
	text := rows.PrintableLines(string(res.Output))
	if !res.Complete() {
		text += fmt.Sprintf("\n(journalctl did not finish: %s)\n", res.Reason)
	}
	return text
}

// tailFile returns the last lines of a regular file, opened without following a link
// and read no further back than maxBytes.
func tailFile(path string, maxBytes int64, maxLines int) string {
	f, fi, err := safefile.Open(path)
	if err != nil {
		return rows.Printable(err.Error()) + "\n"
	}
	defer f.Close()
	start := max(fi.Size()-maxBytes, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, start, maxBytes))
	if err != nil {
		return rows.Printable(err.Error()) + "\n"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if start > 0 && len(lines) > 1 {
		lines = lines[1:] // the first is cut
	}
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return rows.PrintableLines(strings.Join(lines, "\n")) + "\n"
}

// bundle writes files as a tar.gz under Dir/.
func bundle(files []diagFile, at time.Time) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: Dir + "/" + f.name, Mode: 0o600, Size: int64(len(f.text)), ModTime: at, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.text); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
