package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/manifest"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
)

// startWait bounds how long `plugins` and `describe` wait for plugins to start.
const startWait = 30 * time.Second

func runPlugins(ctx context.Context, cfg config, log hclog.Logger, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		if args[0] != "add" {
			return 0, usagef("plugins: unknown subcommand %q", args[0])
		}
		if len(args) != 2 {
			return 0, usagef("plugins add needs exactly one FILE")
		}
		return addPlugin(ctx, cfg, log, args[1], stdout, stderr), nil
	}
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent:", err)
		return exitFail, nil
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	sup.Start(ctx)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSTATE\tRESTARTS\tLAST ERROR\tACTIONS")
	code := exitOK
	for _, st := range sup.Status() {
		if st.State != supervisor.StateRunning {
			code = exitFail
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", st.Name, orDash(st.Version), st.State, st.Restarts,
			orDash(st.LastError), orDash(strings.Join(st.Actions, ",")))
	}
	if err := tw.Flush(); err != nil {
		return exitFail, nil
	}
	return code, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runDescribe(ctx context.Context, cfg config, log hclog.Logger, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) != 1 {
		return 0, usagef("describe needs exactly one PLUGIN")
	}
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent:", err)
		return exitFail, nil
	}
	defer sup.Close()
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	m, err := sup.Describe(ctx, args[0])
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent:", err)
		return exitFail, nil
	}
	fmt.Fprintf(stdout, "name: %s\nversion: %s\ndescription: %s\nsdk_version: %s\nactions:\n", m.Name, m.Version, m.Description, m.SDKVersion)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, a := range m.Actions {
		fmt.Fprintf(tw, "  %s\tlinux=%s\tdarwin=%s\twindows=%s\t%s\n", a.Name, leg(a.Linux), leg(a.Darwin), leg(a.Windows), a.Description)
	}
	_ = tw.Flush()
	return exitOK, nil
}

func leg(l sdk.OSLeg) string {
	s := l.Support.String()
	if l.Mechanism != "" {
		s += "(" + l.Mechanism + ")"
	}
	return s
}

// addPlugin trusts a plugin binary: it copies the file into the plugin dir when it is
// elsewhere, refuses it if group- or world-writable, records its SHA-256 in the
// manifest, and starts it once to check that it is a yuzu plugin of that name. When
// the check fails the manifest is put back as it was.
func addPlugin(ctx context.Context, cfg config, log hclog.Logger, file string, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "yuzu-agent: plugins add: "+format+"\n", args...)
		return exitFail
	}
	base := filepath.Base(file)
	name, ok := supervisor.PluginName(base)
	if !ok {
		return fail("%s: a plugin binary's name must start with %s", file, supervisor.BinaryPrefix)
	}
	dest := filepath.Join(cfg.pluginDir, base)
	if err := os.MkdirAll(cfg.pluginDir, 0o755); err != nil {
		return fail("%v", err)
	}
	if !sameFile(file, dest) {
		if err := copyExecutable(file, dest); err != nil {
			return fail("copy %s into %s: %v", file, cfg.pluginDir, err)
		}
	}
	fi, err := os.Stat(dest)
	if err != nil {
		return fail("%v", err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fail("%s is group- or world-writable (mode %04o); fix with chmod go-w", dest, fi.Mode().Perm())
	}
	sum, err := manifest.HashFile(dest)
	if err != nil {
		return fail("%v", err)
	}
	old, err := manifest.Read(cfg.pluginDir)
	hadManifest := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail("%v", err)
	}
	next := manifest.Manifest{}
	for k, v := range old {
		next[k] = v
	}
	next[base] = sum
	if err := next.Write(cfg.pluginDir); err != nil {
		return fail("%v", err)
	}
	restore := func() {
		if !hadManifest {
			_ = os.Remove(filepath.Join(cfg.pluginDir, manifest.FileName))
			return
		}
		_ = old.Write(cfg.pluginDir)
	}
	sup, err := newSupervisor(cfg, log)
	if err != nil {
		restore()
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	m, derr := sup.Describe(ctx, name)
	sup.Close()
	if derr != nil {
		restore()
		return fail("%s does not work as a yuzu plugin, manifest left unchanged: %v", dest, derr)
	}
	fmt.Fprintf(stdout, "added %s: %s %s, %d actions, sha256 %s\n", dest, m.Name, m.Version, len(m.Actions), hex.EncodeToString(sum))
	return exitOK
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}

// copyExecutable copies src to dest through a temp file renamed into place, mode 0755.
func copyExecutable(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), filepath.Base(dest)+".tmp.")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}
