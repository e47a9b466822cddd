package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/agent/internal/sdnotify"
	"github.com/yuzugo/yuzu/agent/internal/service"
	"github.com/yuzugo/yuzu/agent/internal/sysinfo"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/agent/update"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// The agent's self-update, as run wires it (docs/fleet.md "Updating the agent"), and
// `yuzu-agent update guard|self-check`.

// updateDir is the data dir's directory of the update state.
const updateDir = "update"

// statePath is the update state of a data dir.
func statePath(cfg config) string { return filepath.Join(cfg.dataDir, updateDir, update.StateFile) }

// newUpdater makes run's updater: one that can update when the agent runs from an
// install tree, else one that says why not. trial says this version runs on trial
// (switched to and not confirmed yet); confirm is called after every registration and
// confirms the trial, telling the service manager the agent is ready then.
func newUpdater(cfg config, keys *trust.Keys, log hclog.Logger) (*update.Updater, bool, func()) {
	c := update.Config{
		Keys: keys, FloorsDir: trustDir(cfg), StatePath: statePath(cfg),
		Version: Version, AgentID: cfg.agentID, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		Platform: func() *commonv1.Platform {
			p := sysinfo.Current()
			return &commonv1.Platform{Os: p.OS, Arch: p.Arch, Version: p.Version}
		}(),
		Log: log,
	}
	exe, err := os.Executable()
	if err == nil {
		var t update.Tree
		t, _, err = update.FindTree(exe, runtime.GOOS)
		if err == nil {
			c.Tree = &t
		}
	}
	if err != nil {
		c.Cannot = err.Error()
	}
	service.PrepareSelfUpdate(&c, cfg.dataDir)
	c.SelfCheck = func(ctx context.Context, binary string) error { return update.SelfCheck(ctx, binary, os.Args[1:]) }
	trial := update.OnTrial(c.StatePath, Version)
	if trial {
		log.Info("this version runs on trial: it is kept once it has registered with the fleet server", "version", Version)
	}
	if c.Tree == nil {
		log.Info("this agent cannot update itself", "reason", rows.Printable(c.Cannot))
	}
	confirm := func() {
		ok, err := update.Confirm(c.StatePath, Version, time.Now())
		switch {
		case err != nil:
			log.Error("the trial of this version could not be confirmed", "error", rows.Printable(err.Error()))
		case ok:
			log.Info("this version passed its trial: it registered with the fleet server", "version", Version)
			readyForService(log, "running; passed its trial")
		}
	}
	return update.New(c), trial, confirm
}

// readyForService tells systemd (Type=notify) that the agent has started. A version
// on trial says it only once it has registered: a version that hangs before that is
// killed at the unit's start timeout, and the guard rolls it back.
func readyForService(log hclog.Logger, status string) {
	if had, err := sdnotify.Send("READY=1\nSTATUS=" + status); had && err != nil {
		log.Warn("could not tell systemd the agent is ready", "error", err)
	}
}

// runUpdate is `yuzu-agent update guard TREE` (run by the service manager before each
// start, with the package's binary; TREE is the install tree's root) and `yuzu-agent
// update self-check`.
func runUpdate(cfg config, log hclog.Logger, args []string, stdout io.Writer) (int, error) {
	switch {
	case len(args) == 1 && args[0] == "self-check":
		_, problems := settingsProblems(cfg, log)
		for _, p := range problems {
			fmt.Fprintln(stdout, "problem:", rows.Printable(p))
		}
		if len(problems) > 0 {
			return exitFail, nil
		}
		fmt.Fprintf(stdout, "self-check of %s passed\n", Version)
		return exitOK, nil
	case len(args) == 2 && args[0] == "watch":
		if runtime.GOOS != "windows" {
			return 0, usagef("update watch is the Windows service's watchdog; elsewhere the service manager runs update guard")
		}
		return service.RunWatch(args[1], statePath(cfg), filepath.Join(cfg.dataDir, updateDir, "watch.log")), nil
	case len(args) == 2 && args[0] == "guard":
		t := update.Tree{Root: args[1], GOOS: runtime.GOOS}
		decision, err := update.Guard(t, statePath(cfg), time.Now())
		if err != nil {
			// The service starts whatever current names: a guard that cannot
			// decide must not keep the agent from running.
			fmt.Fprintln(stdout, "update guard:", rows.Printable(err.Error()))
			return exitOK, nil
		}
		fmt.Fprintln(stdout, "update guard:", rows.Printable(decision))
		return exitOK, nil
	}
	return 0, usagef("update takes guard TREE-DIR, or self-check")
}
