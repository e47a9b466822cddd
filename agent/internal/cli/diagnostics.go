package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/control"
	"github.com/yuzugo/yuzu/agent/internal/diagnostics"
	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/agent/internal/view"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// runDiagnostics is `yuzu-agent diagnostics [--out FILE]`: the configuration's part of
// the support bundle (agent/internal/diagnostics writes it; docs/operations.md,
// "Diagnostics").
func runDiagnostics(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		return 0, usagef("diagnostics takes no arguments but --out FILE, got %q", rows.Printable(args[0]))
	}
	out := cfg.out
	if out == "" {
		out = fmt.Sprintf("yuzu-diagnostics-%s.tar.gz", time.Now().UTC().Format("20060102T150405Z"))
	}
	n, err := diagnostics.Write(ctx, diagnosticsInput(cfg), out)
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent: diagnostics:", rows.Printable(err.Error()))
		return exitFail, nil
	}
	fmt.Fprintf(stdout, "diagnostics written to %s (%d bytes)\n", rows.Printable(out), n)
	return exitOK, nil
}

// diagnosticsInput is what the bundle describes, from the configuration.
func diagnosticsInput(cfg config) diagnostics.Input {
	in := diagnostics.Input{
		Version: Version,
		Commit:  Commit,
		Status: func(ctx context.Context) string {
			qctx, cancel := context.WithTimeout(ctx, statusWait)
			defer cancel()
			r, err := control.Query(qctx, control.Path(cfg.dataDir))
			var sb strings.Builder
			if err != nil {
				fmt.Fprintf(&sb, "no status: %s\n", rows.Printable(err.Error()))
			} else {
				_ = view.WriteReport(&sb, r)
			}
			return sb.String()
		},
		PluginDir:  cfg.pluginDir,
		JournalDir: filepath.Join(cfg.dataDir, fleetDir),
		LogFile:    cfg.logFile,
		Identity:   identity.Files{CA: cfg.caCert, SystemRoots: cfg.tlsSystemRoots, ClientCert: cfg.clientCert, ClientKey: cfg.clientKey},
		CertsDir:   filepath.Join(cfg.dataDir, certsDir),
	}
	if cfg.file != nil {
		in.ConfigFile = cfg.file.path
	}
	var cb strings.Builder
	_ = writeConfigRows(&cb, configRows(cfg))
	in.Config = cb.String()
	if cfg.enrollmentToken != "" {
		in.Secrets = append(in.Secrets, cfg.enrollmentToken)
	}
	return in
}
