package supervisor

import (
	"context"

	"github.com/yuzugo/yuzu/sdk/host"
)

// Trial starts one build once, as a command would start it (verified bytes, its box,
// handshake, Describe, Configure), returns what it said of itself and stops it. It
// runs no command. `plugins add` asks it about a build before the build enters the
// catalog: its name, version, protocol and definitions are the build's own words.
func Trial(ctx context.Context, o Options, b Binary) (host.Manifest, error) {
	o.defaults()
	l := o.Launcher
	if l == nil {
		o.ReapOrphans = false // the caller's other children are none of the trial's business
		pl := newPluginLauncher(o)
		defer pl.close()
		l = pl
	}
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	c, err := l.Launch(ctx, b, sdkConfig(o))
	if err != nil {
		return host.Manifest{}, err
	}
	m := c.Manifest()
	c.Stop(o.StopGrace)
	return m, nil
}
