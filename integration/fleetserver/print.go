package fleetserver

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// WriteRegistration shows a registration for a person: the agent, its host and
// platform, each plugin with its capabilities, and its tags. Everything in it comes
// from the agent, so every field is escaped.
func WriteRegistration(w io.Writer, reg *agentv1.RegisterRequest) {
	info := reg.GetInfo()
	p := info.GetPlatform()
	fmt.Fprintf(w, "fleet: registered agent %s on %s (%s/%s %s), agent %s\n", rows.Printable(info.GetAgentId()),
		rows.Printable(info.GetHostname()), rows.Printable(p.GetOs()), rows.Printable(p.GetArch()), rows.Printable(p.GetVersion()),
		rows.Printable(info.GetAgentVersion()))
	for _, pi := range info.GetPlugins() {
		fmt.Fprintf(w, "         plugin %s %s: %s\n", rows.Printable(pi.GetName()), rows.Printable(pi.GetVersion()), rows.Printable(strings.Join(pi.GetCapabilities(), ", ")))
	}
	tags := info.GetScopableTags()
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		kv = append(kv, rows.Printable(k+"="+tags[k]))
	}
	fmt.Fprintf(w, "         tags: {%s}\n", strings.Join(kv, ", "))
}

// WriteResponse shows one response as the server received it: each row of a RUNNING
// message on its own line, then the terminal status, escaped like rows.
func WriteResponse(w io.Writer, r *agentv1.CommandResponse) {
	id := rows.Printable(r.GetCommandId())
	if r.GetStatus() == agentv1.CommandResponse_RUNNING {
		var b strings.Builder
		for _, row := range strings.Split(r.GetOutput(), "\n") {
			fmt.Fprintf(&b, "   %s RUNNING  %s\n", id, rows.Printable(row))
		}
		_, _ = io.WriteString(w, b.String())
		return
	}
	extra := ""
	if out := r.GetOutput(); out != "" {
		extra = " output=" + rows.Printable(out)
	}
	if e := r.GetError(); e != nil {
		extra += " error=" + rows.Printable(e.GetCode())
	}
	fmt.Fprintf(w, "   %s %-8s exit_code=%d plugin_result_status=%s%s\n", id, r.GetStatus(), r.GetExitCode(),
		strings.TrimPrefix(r.GetPluginResultStatus().String(), "PLUGIN_RESULT_"), extra)
}
