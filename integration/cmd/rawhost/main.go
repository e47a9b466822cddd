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

	"github.com/yuzugo/yuzu/integration/internal/raw"
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
	hc, c, err := raw.Start(bin, "")
	if err != nil {
		return err
	}
	defer c.Kill()
	ctx := context.Background()
	// Describe before Configure, as the agent asks it at every start.
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
