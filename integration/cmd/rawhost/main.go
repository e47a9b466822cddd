// Command rawhost is the floor under a cold `yuzu-agent exec`: a whole process that
// starts one plugin over bare go-plugin with AutoMTLS (host.ClientConfig), asks its
// Describe, configures its data dir, runs one action, prints the rows and exits,
// with nothing of the agent (no catalog, no checksum, no sealed image, no
// supervisor, no dispatcher). BenchmarkColdExecVsRaw times it beside the agent.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

func main() {
	bin := flag.String("plugin", "", "the plugin binary to start")
	dataDir := flag.String("data-dir", os.TempDir(), "data dir handed to the plugin")
	action := flag.String("action", "count", "the action to run")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "rawhost: -plugin is required")
		os.Exit(2)
	}
	if err := run(*bin, *dataDir, *action, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rawhost:", err)
		os.Exit(1)
	}
}

func run(bin, dataDir, action string, w io.Writer) error {
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cfg := host.ClientConfig(cmd)
	cfg.Logger = hclog.NewNullLogger()
	cfg.StartTimeout = 30 * time.Second
	c := plugin.NewClient(cfg)
	defer c.Kill()
	cp, err := c.Client()
	if err != nil {
		return err
	}
	hc, err := host.Dispense(cp)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := hc.Describe(ctx); err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	if err := hc.Configure(ctx, sdk.Config{DataDir: dataDir}); err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	res, err := hc.Execute(ctx, host.Command{Action: action}, func(rows []string) error {
		for _, r := range rows {
			if _, err := fmt.Fprintln(w, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if res.Code != 0 {
		return fmt.Errorf("%s: exit code %d", action, res.Code)
	}
	return nil
}
