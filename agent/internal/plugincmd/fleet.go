package plugincmd

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/internal/installer"
	"github.com/yuzugo/yuzu/agent/internal/session"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// FleetInstaller installs a build the fleet server delivered (docs/fleet.md "Plugins
// over the fleet link") through the path of plugins add, then has the running
// supervisor take it, and answers rows saying what became of it:
// `plugin|NAME|FROM|TO|KIND|STATE`, or an error row when the build was refused or
// rolled back. The publisher's key-set updates that came with it are applied first,
// oldest first; one that does not verify is reported and the others still apply.
func FleetInstaller(env Env, log hclog.Logger, sup *supervisor.Supervisor, keys *trust.Keys) session.InstallFunc {
	ic := installerConfig(env, keys, func(ctx context.Context, name string) map[string][]definition.Definition {
		return servedByOthers(ctx, sup, name, io.Discard)
	})
	return func(ctx context.Context, o installer.Offer, keySets []session.KeySetUpdate) ([]string, error) {
		var out []string
		for _, k := range keySets {
			res, err := keys.Advance(k.Document, k.Signature)
			switch {
			case err != nil:
				out = append(out, rows.Format("error", "key-set update not taken: "+err.Error()))
			case res.Applied:
				log.Info("publisher key set advanced by the fleet server", "publisher", res.Publisher, "from", res.From, "to", res.To)
				out = append(out, rows.Format("keyset", res.Publisher, strconv.FormatUint(res.From, 10), strconv.FormatUint(res.To, 10)))
			}
		}
		res, err := installer.Install(ctx, ic, o)
		if err != nil {
			return nil, err
		}
		name := o.Claim.Name
		from := "-"
		if res.Change.From != nil {
			from = res.Change.From.VersionOrUnknown()
		}
		if res.Change.Kind != trust.KindSame {
			if _, err := sup.Reload(); err != nil {
				return nil, fmt.Errorf("installed, but the running agent did not take it: %w", err)
			}
			sup.Settle(ctx)
		}
		for _, st := range sup.Status() {
			if st.Name != name {
				continue
			}
			if st.LastRollback != "" && st.Build != res.Change.Entry.Label() {
				return append(out, rows.Format("error", fmt.Sprintf("plugin %s %s was rolled back to %s: %s", name, res.Change.Entry.Label(), st.Build, st.LastRollback))), nil
			}
			if st.State == supervisor.StateRefused {
				return append(out, rows.Format("error", "plugin "+name+" refused: "+st.LastError)), nil
			}
			return append(out, rows.Format("plugin", name, from, res.Change.Entry.VersionOrUnknown(), res.Change.Kind, string(st.State))), nil
		}
		return append(out, rows.Format("error", "plugin "+name+" is not in the running agent after its installation")), nil
	}
}
