package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/control"
	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/agent/internal/metrics"
	"github.com/yuzugo/yuzu/agent/internal/session"
	"github.com/yuzugo/yuzu/agent/internal/view"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// serveStatus has `run` answer `yuzu-agent status` on its socket until ctx ends or
// the returned stop is called.
func serveStatus(ctx context.Context, cfg config, rs runSettings, sup *supervisor.Supervisor, m *metrics.Metrics, sess *atomic.Pointer[session.Session], log hclog.Logger) (func(), error) {
	l, err := control.Listen(cfg.dataDir)
	if errors.Is(err, control.ErrNoUnixSockets) {
		// The fleet link matters more than the status query: run on, and say so.
		log.Warn("no status socket: yuzu-agent status cannot reach this agent", "error", err)
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("status socket: %w", err)
	}
	started := time.Now().UTC()
	configFile := ""
	if cfg.file != nil {
		configFile = cfg.file.path
	}
	status := func() control.Report {
		link := m.Link()
		r := control.Report{
			Version: Version, Commit: Commit, PID: os.Getpid(), Started: started,
			AgentID: cfg.agentID, Server: rs.server, ConfigFile: configFile,
			Connected: link.Connected, Reconnects: link.Reconnects, QueueDepth: link.QueueDepth,
			Plugins: sup.Status(),
		}
		if s := sess.Load(); s != nil {
			r.JournalProblem, r.JournalSince, r.HeldAnswers = s.JournalState()
			r.LinkError = s.LinkError()
			e := s.Enrollment()
			r.Enrollment, r.EnrollmentReason, r.EnrollmentSince, r.RenewalError = e.Status, e.Reason, e.Since, e.RenewError
			r.Update = s.UpdateStatus()
		}
		if rs.identity != nil {
			now := time.Now()
			leaf, ok, err := rs.identity.Current()
			switch {
			case err != nil:
				r.CertificateProblem, r.CertificateBad = err.Error(), true
			case ok:
				r.Certificate = identity.Describe(leaf, now)
				r.CertificateProblem, r.CertificateBad = leaf.Problem(now), leaf.Bad(now)
			}
		}
		return r
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := control.Handlers{Status: status, Reload: func(ctx context.Context) control.ReloadReport {
			changes, err := sup.Reload()
			if err != nil {
				return control.ReloadReport{Error: err.Error(), Plugins: sup.Status()}
			}
			sup.Settle(ctx)
			return control.ReloadReport{Changes: changes, Plugins: sup.Status()}
		}}
		if err := control.Serve(sctx, l, h); err != nil {
			log.Error("status socket stopped", "error", err)
		}
	}()
	log.Info("status socket", "path", control.Path(cfg.dataDir))
	return func() {
		cancel()
		<-done
		_ = os.Remove(control.Path(cfg.dataDir))
	}, nil
}

// statusWait bounds how long `status` waits for the agent's answer.
const statusWait = 15 * time.Second

// runStatus is `yuzu-agent status`: the running agent's own account of itself. Exit 0
// when it is connected and every plugin runs, 1 otherwise, 3 when no agent answers.
func runStatus(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		return 0, usagef("status takes no arguments, got %q", rows.Printable(args[0]))
	}
	ctx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	r, err := control.Query(ctx, control.Path(cfg.dataDir))
	if err != nil {
		fmt.Fprintln(stderr, "yuzu-agent:", rows.Printable(err.Error()))
		if errors.Is(err, control.ErrNotRunning) {
			return exitNotRunning, nil
		}
		return exitFail, nil
	}
	if err := view.WriteReport(stdout, r); err != nil {
		return exitFail, nil
	}
	if !r.Connected || r.JournalProblem != "" {
		return exitFail, nil
	}
	for _, p := range r.Plugins {
		// An idle plugin is well: its next command starts it.
		if !p.State.Ready() {
			return exitFail, nil
		}
	}
	return exitOK, nil
}

// exitNotRunning is status's exit code when no agent answers (as LSB init scripts
// say "program is not running").
const exitNotRunning = 3
