package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/control"
	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/agent/internal/metrics"
	"github.com/yuzugo/yuzu/agent/internal/output"
	"github.com/yuzugo/yuzu/agent/internal/session"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/update"
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
	if err := writeReport(stdout, r); err != nil {
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

// writeReport prints a report for people; every field from the agent is escaped.
func writeReport(w io.Writer, r control.Report) error {
	conn := "disconnected"
	switch {
	case r.Connected:
		conn = "connected"
	case r.CertificateBad:
		// The likely reason, and one the operator can act on, comes first.
		conn = "disconnected: " + r.CertificateProblem
	case r.Enrollment == "pending":
		conn = "disconnected: enrollment pending approval since " + r.EnrollmentSince.Format(time.RFC3339)
	case r.Enrollment == "denied":
		conn = "disconnected: enrollment denied: " + r.EnrollmentReason
	case r.LinkError != "":
		conn = "disconnected: " + r.LinkError
	}
	fmt.Fprintf(w, "agent:       %s (commit %s), pid %d, up since %s\n", output.Cell(r.Version), output.Cell(r.Commit), r.PID, r.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "agent id:    %s\n", output.Cell(r.AgentID))
	fmt.Fprintf(w, "server:      %s, %s, %d reconnects\n", output.Cell(r.Server), output.Cell(conn), r.Reconnects)
	switch {
	case r.Certificate != "" && r.CertificateProblem != "":
		fmt.Fprintf(w, "certificate: %s; WARNING: %s\n", output.Cell(r.Certificate), output.Cell(r.CertificateProblem))
	case r.Certificate != "":
		fmt.Fprintf(w, "certificate: %s\n", output.Cell(r.Certificate))
	case r.CertificateProblem != "":
		fmt.Fprintf(w, "certificate: %s\n", output.Cell(r.CertificateProblem))
	case r.Enrollment != "":
		fmt.Fprintf(w, "certificate: none (enrollment %s)\n", output.Cell(r.Enrollment))
	}
	if r.RenewalError != "" {
		fmt.Fprintf(w, "renewal:     FAILED: %s; the current certificate serves until it expires\n", output.Cell(r.RenewalError))
	}
	if u := r.Update; u != nil {
		writeUpdate(w, u)
	}
	fmt.Fprintf(w, "queue:       %d commands waiting or running\n", r.QueueDepth)
	if r.JournalProblem != "" {
		fmt.Fprintf(w, "journal:     CANNOT WRITE since %s: %s; new commands are refused, %d answers held\n",
			r.JournalSince.Format(time.RFC3339), output.Cell(r.JournalProblem), r.HeldAnswers)
	} else {
		fmt.Fprintf(w, "journal:     writes\n")
	}
	fmt.Fprintf(w, "config file: %s\n", output.Cell(r.ConfigFile))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tVERSION\tTRUST\tSTATE\tPID\tRESTARTS\tROLLBACKS\tLAST ERROR\tMEMORY PEAK/LIMIT\tTASKS PEAK/LIMIT\tCPU LIMIT")
	for _, st := range r.Plugins {
		mem, tasks, cpu := boxCells(st)
		pid := "-"
		if st.Pid > 0 {
			pid = strconv.Itoa(st.Pid)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", output.Cell(st.Name), output.Cell(versionCell(st)), output.Cell(trustCell(st)),
			output.Cell(string(st.State)), pid, st.Restarts, st.Rollbacks, output.Cell(st.LastError), mem, tasks, cpu)
	}
	return tw.Flush()
}

// writeUpdate prints the agent's own updates: what runs, what was offered, the last
// check and its result, the next, why it cannot update, and its rollbacks.
func writeUpdate(w io.Writer, u *update.Status) {
	line := "update:      running " + output.Cell(u.Running)
	if u.Cannot != "" {
		line += "; cannot update itself: " + output.Cell(u.Cannot)
	}
	if !u.LastCheck.IsZero() {
		line += fmt.Sprintf("; last check %s: %s", u.LastCheck.Format(time.RFC3339), output.Cell(u.LastResult))
	}
	if !u.NextCheck.IsZero() {
		line += "; next check " + u.NextCheck.UTC().Format(time.RFC3339)
	}
	fmt.Fprintln(w, line)
	for _, rb := range u.Rollbacks {
		fmt.Fprintf(w, "rollback:    %s -> %s at %s: %s\n", output.Cell(rb.From), output.Cell(rb.To), rb.At.Format(time.RFC3339), output.Cell(rb.Reason))
	}
}
