package cli

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

	"github.com/yuzugo/yuzu/agent/internal/control"
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

// Bounds of what the bundle takes from the machine.
const (
	diagLogBytes  = 1 << 20
	diagLogLines  = 2000
	diagSumsBytes = 1 << 20
	diagListMax   = 10000
	diagToolWait  = 20 * time.Second
)

// diagDir is the directory every bundle entry is under.
const diagDir = "yuzu-diagnostics"

type diagFile struct {
	name string
	text string
}

// runDiagnostics is `yuzu-agent diagnostics [--out FILE]`.
func runDiagnostics(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		return 0, usagef("diagnostics takes no arguments but --out FILE, got %q", rows.Printable(args[0]))
	}
	out := cfg.out
	if out == "" {
		out = fmt.Sprintf("yuzu-diagnostics-%s.tar.gz", time.Now().UTC().Format("20060102T150405Z"))
	}
	files := collectDiagnostics(ctx, cfg)
	b, err := bundle(files, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent: diagnostics:", err)
		return exitFail, nil
	}
	// Written whole or not at all, readable by its owner only: it describes the
	// machine's agent in detail.
	if err := atomicfile.WriteMode(out, b, 0o600); err != nil {
		var syncErr *atomicfile.DirSyncError
		if !errors.As(err, &syncErr) {
			fmt.Fprintln(stderr, "yuzu-agent: diagnostics:", rows.Printable(err.Error()))
			return exitFail, nil
		}
	}
	fmt.Fprintf(stdout, "diagnostics written to %s (%d bytes)\n", rows.Printable(out), len(b))
	return exitOK, nil
}

// collectDiagnostics gathers the bundle's files, each secret the configuration holds
// replaced wherever it appears.
func collectDiagnostics(ctx context.Context, cfg config) []diagFile {
	var files []diagFile
	add := func(name, text string) { files = append(files, diagFile{name, text}) }

	add("version.txt", diagVersion())
	var cb strings.Builder
	if cfg.file != nil && cfg.file.path != "" {
		fmt.Fprintf(&cb, "configuration file: %s\n", rows.Printable(cfg.file.path))
	} else {
		cb.WriteString("configuration file: none\n")
	}
	_ = writeConfigRows(&cb, configRows(cfg))
	add("config.txt", cb.String())

	qctx, cancel := context.WithTimeout(ctx, statusWait)
	r, err := control.Query(qctx, control.Path(cfg.dataDir))
	cancel()
	var sb strings.Builder
	if err != nil {
		fmt.Fprintf(&sb, "no status: %s\n", rows.Printable(err.Error()))
	} else {
		_ = writeReport(&sb, r)
	}
	add("status.txt", sb.String())
	add("plugins.txt", diagPlugins(cfg.pluginDir))
	add("log.txt", redactValues(diagLog(ctx, cfg)))
	add("journal.txt", diagListing(filepath.Join(cfg.dataDir, fleetDir)))
	add("certificate.txt", diagCertificate(cfg))

	secrets := []string{}
	if cfg.enrollmentToken != "" {
		secrets = append(secrets, cfg.enrollmentToken)
	}
	for i := range files {
		files[i].text = redact(files[i].text, secrets)
	}
	return files
}

// auditValues finds the parameter values a debug-level command line carries (the
// dispatcher's `values` field, in the text and the JSON log format): a file's new
// content or a tag's value may be a secret, and the bundle is made to be handed over.
var auditValues = regexp.MustCompile(`(\bvalues=|"values":)"(?:[^"\\]|\\.)*"`)

// redactValues replaces every command's parameter values in log text.
func redactValues(text string) string {
	return auditValues.ReplaceAllString(text, `${1}"`+redacted+`"`)
}

// diagCertificate describes the client certificate run would present, what is wrong
// with it, and the files of the enrolled identity (names and sizes: the key is never
// read into the bundle).
func diagCertificate(cfg config) string {
	var b strings.Builder
	src := identity.New(identity.Files{CA: cfg.caCert, SystemRoots: cfg.tlsSystemRoots, ClientCert: cfg.clientCert, ClientKey: cfg.clientKey},
		filepath.Join(cfg.dataDir, certsDir))
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
	b.WriteString(diagListing(filepath.Join(cfg.dataDir, certsDir)))
	return b.String()
}

// redact replaces every secret in text.
func redact(text string, secrets []string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, redacted)
		}
	}
	return text
}

func diagVersion() string {
	var b strings.Builder
	fmt.Fprintf(&b, "yuzu-agent %s (commit %s)\n", Version, Commit)
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
func diagLog(ctx context.Context, cfg config) string {
	if cfg.logFile != "" {
		return tailFile(cfg.logFile, diagLogBytes, diagLogLines)
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
	text := printableLines(string(res.Output))
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
	return printableLines(strings.Join(lines, "\n")) + "\n"
}

// bundle writes files as a tar.gz under diagDir/.
func bundle(files []diagFile, at time.Time) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: diagDir + "/" + f.name, Mode: 0o600, Size: int64(len(f.text)), ModTime: at, Typeflag: tar.TypeReg}
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
