// Package view renders for people what the agent says about itself and its plugins:
// the `status` report (also in the support bundle), the plugins table and a plugin's
// manifest.
package view

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/yuzugo/yuzu/agent/internal/control"
	"github.com/yuzugo/yuzu/agent/internal/limits"
	"github.com/yuzugo/yuzu/agent/internal/output"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/update"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// WriteReport prints a status report for people; every field from the agent is escaped.
func WriteReport(w io.Writer, r control.Report) error {
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

// WritePlugins prints the plugins table of `plugins` and the shell's .plugins.
func WritePlugins(w io.Writer, statuses []supervisor.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tPROTOCOL\tTRUST\tSTATE\tRESTARTS\tLAST ERROR\tMEMORY PEAK/LIMIT\tTASKS PEAK/LIMIT\tCPU LIMIT\tACTIONS")
	for _, st := range statuses {
		protocol := "-"
		if st.Protocol > 0 {
			protocol = strconv.Itoa(st.Protocol)
		}
		mem, tasks, cpu := boxCells(st)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", output.Cell(st.Name), output.Cell(versionCell(st)), protocol, output.Cell(trustCell(st)),
			st.State, st.Restarts, output.Cell(st.LastError), mem, tasks, cpu, output.Cell(strings.Join(st.Actions, ",")))
	}
	return tw.Flush()
}

// versionCell is the version a plugin runs; while no child has said one, the
// catalog's.
func versionCell(st supervisor.Status) string {
	if st.Version != "" {
		return st.Version
	}
	v, _, _ := strings.Cut(st.Build, " (")
	if strings.HasPrefix(v, "sha256 ") {
		return ""
	}
	return v
}

// trustCell says who vouches for a plugin's build: "unsigned", or the publisher.
func trustCell(st supervisor.Status) string {
	switch st.Trust {
	case "":
		return "-" // a binary the catalog does not name
	case "unsigned":
		return "unsigned"
	}
	pub, _, _ := strings.Cut(strings.TrimPrefix(st.Trust, "signed by "), " ")
	return "signed:" + pub
}

// boxCells are a plugin's resource columns: peak use over limit ("-" for a peak the
// kernel does not keep), or "none" when its child runs without a box.
func boxCells(st supervisor.Status) (mem, tasks, cpu string) {
	if !st.Boxed {
		return "none", "none", "none"
	}
	peak := func(v int64, f func(int64) string) string {
		if !st.Usage.Known || v <= 0 {
			return "-"
		}
		return f(v)
	}
	// A zero limit is one the system could not enforce (limits.Limits).
	limit := func(v int64, f func(int64) string) string {
		if v <= 0 {
			return "none"
		}
		return f(v)
	}
	count := func(n int64) string { return strconv.FormatInt(n, 10) }
	mem = peak(st.Usage.MemoryPeak, limits.MiB) + "/" + limit(st.Limits.MemoryBytes, limits.MiB)
	tasks = peak(st.Usage.TasksPeak, count) + "/" + limit(st.Limits.Tasks, count)
	cpu = "none"
	if st.Limits.CPUs > 0 {
		cpu = strconv.FormatFloat(st.Limits.CPUs, 'f', -1, 64)
	}
	return mem, tasks, cpu
}

// WriteManifest writes a plugin's manifest for people: identity, then per action its
// support per OS, parameters with their rules, the rows it writes and its result
// columns, then the definitions it ships. mechanism, when not empty, is what the host
// actually uses (what describe's mechanism probe answered).
func WriteManifest(w io.Writer, m host.Manifest, mechanism string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("name: %s\nversion: %s\ndescription: %s\nsdk_version: %s\nprotocol: %d\n",
		output.Cell(m.Name), output.Cell(m.Version), output.Cell(m.Description), output.Cell(m.SDKVersion), m.Protocol)
	if m.Vendor != "" {
		p("vendor: %s\n", output.Cell(m.Vendor))
	}
	if mechanism != "" {
		p("mechanism: %s\n", mechanism)
	}
	p("actions:\n")
	for _, a := range m.Actions {
		p("  %s: %s\n", output.Cell(a.Name), output.Cell(a.Description))
		p("    support: linux=%s darwin=%s windows=%s\n", support(a.Linux), support(a.Darwin), support(a.Windows))
		if len(a.Params) == 0 {
			p("    parameters: none\n")
		} else {
			p("    parameters:\n")
			for i := range a.Params {
				p("      %s\n", paramLine(&a.Params[i]))
			}
		}
		for _, r := range a.Rows {
			p("    row: %s\n", output.Cell(strings.Join(append([]string{r.Kind}, columnNames(r.Columns)...), "|")))
		}
		p("    columns: %s\n", output.Cell(strings.Join(columnNames(a.Columns), ", ")))
	}
	if len(m.Definitions) > 0 || m.Vendor != "" {
		p("definitions:\n")
		defs, err := m.ServedDefinitions()
		if err != nil {
			p("  (do not parse: %s)\n", output.Cell(err.Error()))
		}
		for _, d := range defs {
			p("  %s: %s/%s (%s, %s, ttl %ds, %s)\n", output.Cell(d.ID), output.Cell(d.Plugin), output.Cell(d.Action), d.Type, strings.Join(d.Platforms, ","), d.TTLSeconds, d.Approval)
		}
	}
}

func support(s sdk.OSSupport) string {
	out := s.Level.String()
	if s.Mechanism != "" {
		out += "(" + output.Cell(s.Mechanism) + ")"
	}
	return out
}

func columnNames(cols []sdk.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
		if c.Type != sdk.TypeString {
			out[i] += ":" + string(c.Type)
		}
	}
	return out
}

// paramLine describes one declared parameter on one line, e.g.
// `key string required maxLength=64 pattern=^[a-z]+$ — Tag key`.
func paramLine(p *sdk.Parameter) string {
	parts := []string{output.Cell(p.Name), string(p.Type)}
	if p.Required {
		parts = append(parts, "required")
	}
	if p.Default != nil {
		parts = append(parts, "default="+strconv.Quote(*p.Default))
	}
	if p.MinLength != nil {
		parts = append(parts, "minLength="+strconv.Itoa(*p.MinLength))
	}
	if p.MaxLength != nil {
		parts = append(parts, "maxLength="+strconv.Itoa(*p.MaxLength))
	}
	if p.Pattern != "" {
		parts = append(parts, "pattern="+output.Cell(p.Pattern))
	}
	if p.Enum != nil {
		parts = append(parts, "enum="+output.Cell(strings.Join(p.Enum, "|")))
	}
	if p.Minimum != nil {
		parts = append(parts, "minimum="+strconv.FormatInt(*p.Minimum, 10))
	}
	if p.Maximum != nil {
		parts = append(parts, "maximum="+strconv.FormatInt(*p.Maximum, 10))
	}
	if p.Clamped {
		parts = append(parts, "clamped")
	}
	line := strings.Join(parts, " ")
	if p.Description != "" {
		line += " — " + output.Cell(p.Description)
	}
	return line
}
