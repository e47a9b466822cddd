package main

import (
	"context"
	"embed"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/trace"
)

// Identity, as upstream.
const (
	pluginName        = "firewall"
	pluginVersion     = "0.7.0"
	pluginDescription = "Firewall status and rule listing"
)

// definitions are the security.firewall.* InstructionDefinitions, shipped inside the
// binary.
//
//go:embed definitions/*.yaml
var definitions embed.FS

// reader is one operating system's way of reading the firewall. Each action's rows
// are computed whole before any is written, so the row order is the reader's.
type reader interface {
	State(ctx context.Context) []rows.Row
	Rules(ctx context.Context) []rows.Row
}

// firewallPlugin answers both actions from one reader.
type firewallPlugin struct {
	r reader
}

func newPlugin() *sdk.Plugin {
	return newPluginWith(newReader())
}

// newPluginWith builds the plugin around r; tests hand in their own reader.
func newPluginWith(r reader) *sdk.Plugin {
	fp := &firewallPlugin{r: r}
	p := sdk.New(pluginName, pluginVersion, pluginDescription)
	p.Vendor = "security" // the SDK derives the definitions security.firewall.<action>; definitions/ adds what Go cannot say
	// The definitions name the columns upstream's do. The rows really differ by
	// backend (docs/firewall.md), which is why the columns are set explicitly
	// instead of being read off the row declarations.
	p.Handle("state", fp.state,
		sdk.Describe("Says whether the host firewall is on and which firewall answered; "+
			"unknown means the read did not complete, never off"),
		sdk.Row("backend", "backend"), sdk.MechanismProbe(),
		sdk.Row("state", "state"),
		sdk.Row("mode", "mode"),
		sdk.Row("block_all", "state"),
		sdk.Row("stealth", "state"),
		sdk.Row("pf", "state"),
		sdk.Row("anchor", "name"),
		sdk.Row("profile", "profile", "state"),
		sdk.Row("ruleset", "count"),
		sdk.Row("fallthrough", "reason"),
		sdk.Columns("profile_or_backend", "state"),
		osSupport(),
	)
	p.Handle("rules", fp.rules,
		sdk.Describe("Lists the rules of the firewall that answered; ruleset|unknown means the list "+
			"is not known to be whole"),
		sdk.Row("backend", "backend"),
		// A rule's fields depend on the backend that answered (Windows: name, enabled,
		// direction, action, profiles; ufw: index, to, action, from; nftables,
		// iptables and firewalld: the store first; pf: the rule line), so the one
		// shape every rule row has is a free-text rest (docs/firewall.md). The
		// definition's columns are Windows' and upstream's.
		sdk.Row("rule", "rule"),
		sdk.Row("app", "path", "decision"),
		sdk.Row("anchor", "name"),
		sdk.Row("rules", "state"),
		sdk.Row("ruleset", "count"),
		sdk.Row("truncated", "truncated"),
		sdk.Row("fallthrough", "reason"),
		sdk.Columns("rule_name", "enabled", "direction", "action", "profiles"),
		osSupport(),
	)
	p.Definitions(definitions, "definitions")
	return p
}

// osSupport declares both actions supported everywhere, each OS with its own
// mechanism. On Linux the mechanism is the first rung of the ladder and the fallback
// names the rest of it.
func osSupport() sdk.ActionOption {
	return func(a *sdk.Action) {
		sdk.OnLinux(sdk.OSSupport{Level: sdk.SupportSupported, Rung: 1, Mechanism: "firewalld_dbus",
			Fallback: "nftables_netlink with iptables_legacy_save (their union); ufw_status_numbered when nftables holds no table; else backend|none"})(a)
		sdk.OnDarwin(sdk.OSSupport{Level: sdk.SupportSupported, Rung: 1, Mechanism: "socketfilterfw_pfctl"})(a)
		sdk.OnWindows(sdk.OSSupport{Level: sdk.SupportSupported, Rung: 1, Mechanism: "inetfwpolicy2_com"})(a)
	}
}

// state and rules always end with rc 0 and no typed status: how complete the answer
// is travels in the rows themselves (unknown, ruleset|unknown, error and fallthrough
// rows), as upstream's do.
func (fp *firewallPlugin) state(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	write(out, fp.r.State(trace.With(ctx, req.Log)))
	return sdk.Done(), nil
}

func (fp *firewallPlugin) rules(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	write(out, fp.r.Rules(trace.With(ctx, req.Log)))
	return sdk.Done(), nil
}

// write hands the rows to the SDK, which escapes them. Firewall names were already
// folded by the readers (`|`, CR and LF become `_`), so for them the SDK's escaping
// only turns a trailing `\` of a field that is not last into `/` and invalid UTF-8
// into U+FFFD. The fields the readers leave raw, firewalld service names and pf rule
// lines, are always the last field of their row: `|` stays, CR and LF become spaces.
func write(out *sdk.Output, rs []rows.Row) {
	for _, r := range rs {
		out.Row(r.Kind, r.Fields...)
	}
}
