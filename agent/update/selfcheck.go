package update

import (
	"context"
	"fmt"
	"time"

	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// SelfCheck runs a staged binary's `update self-check` with this agent's own
// arguments runArgs (the configuration file, the dirs; its `run` left out), for
// Config.SelfCheck: it must load them, the plugins and their catalog without
// connecting, in the same environment.
func SelfCheck(ctx context.Context, binary string, runArgs []string) error {
	args := []string{binary}
	dropped := false
	for _, a := range runArgs {
		if a == "run" && !dropped {
			dropped = true
			continue
		}
		args = append(args, a)
	}
	args = append(args, "update", "self-check")
	res, err := subprocess.Run(ctx, subprocess.Spec{Argv: args, Timeout: 2 * time.Minute, MergeStderr: true, MaxOutput: 64 << 10})
	if err != nil {
		return err
	}
	if !res.Complete() || res.ExitCode != 0 {
		return fmt.Errorf("%s (exit %d): %s", res.Reason, res.ExitCode, rows.Printable(string(res.Output)))
	}
	return nil
}
