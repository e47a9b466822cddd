// Package raw starts a plugin over bare go-plugin with AutoMTLS and nothing of the
// agent (no catalog, no checksum, no supervisor): the floor the benchmarks measure the
// agent against.
package raw

import (
	"context"
	"os"
	"os/exec"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// Start starts the plugin binary at path and, when dataDir is not "", configures it
// with that data dir. The caller kills the returned plugin.Client.
func Start(path, dataDir string) (*host.Client, *plugin.Client, error) {
	cmd := exec.Command(path)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cfg := host.ClientConfig(cmd)
	cfg.Logger = hclog.NewNullLogger()
	cfg.StartTimeout = 30 * time.Second
	c := plugin.NewClient(cfg)
	cp, err := c.Client()
	if err != nil {
		c.Kill()
		return nil, nil, err
	}
	hc, err := host.Dispense(cp)
	if err != nil {
		c.Kill()
		return nil, nil, err
	}
	if dataDir != "" {
		if err := hc.Configure(context.Background(), sdk.Config{DataDir: dataDir}); err != nil {
			c.Kill()
			return nil, nil, err
		}
	}
	return hc, c, nil
}
