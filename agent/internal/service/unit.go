package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// Unit is where the service's definition lives on a systemd or launchd machine and
// how its service manager's commands run.
type Unit struct {
	Path    string // the systemd unit or the launchd plist
	Systemd bool   // systemd; launchd otherwise
	// Tool runs one service manager command (RunTool, or a test's recorder). Its
	// output is returned for the caller to print, and is not repeated in the error.
	Tool func(ctx context.Context, argv ...string) (string, error)
}

// RunTool runs one service manager command, for Unit.Tool.
func RunTool(ctx context.Context, argv ...string) (string, error) {
	res, err := subprocess.Run(ctx, subprocess.Spec{Argv: argv, Timeout: time.Minute, MergeStderr: true})
	if err != nil {
		return "", err
	}
	out := rows.PrintableLines(strings.TrimSpace(string(res.Output)))
	if !res.Complete() || res.ExitCode != 0 {
		return out, fmt.Errorf("%s: %s (exit %d)", argv[0], res.Reason, res.ExitCode)
	}
	return out, nil
}

// ManageUnit is `service install|uninstall|status` on a systemd or launchd machine:
// install writes the definition that runs spec and starts it, leaving the machine as
// it was when the service manager fails; uninstall stops the service and removes the
// definition; status prints what the service manager says. It returns the exit code.
func ManageUnit(ctx context.Context, u Unit, action string, spec Spec, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "yuzu-agent: service:", rows.PrintableLines(err.Error()))
		return exitFail
	}
	path, systemd := u.Path, u.Systemd
	// steps runs the service manager's commands in order, printing what they say; the
	// first failure ends it.
	steps := func(argvs ...[]string) error {
		for _, argv := range argvs {
			out, err := u.Tool(ctx, argv...)
			if out != "" {
				fmt.Fprintln(stdout, out)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	switch action {
	case "install":
		var text string
		var err error
		if systemd {
			text, err = SystemdUnit(spec)
		} else {
			text, err = LaunchdPlist(spec)
		}
		if err != nil {
			return fail(err)
		}
		before, beforeErr := os.ReadFile(path) // what to put back if the manager fails
		if err := writeDefinition(path, []byte(text)); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", rows.Printable(path))
		if systemd {
			err = steps([]string{"/usr/bin/systemctl", "daemon-reload"}, []string{"/usr/bin/systemctl", "enable", "--now", Name + ".service"})
		} else {
			err = steps([]string{"/bin/launchctl", "bootstrap", "system", path})
		}
		if err != nil {
			// Leave the machine as it was: the definition that was there, or none.
			var undo error
			if beforeErr == nil {
				undo = writeDefinition(path, before)
			} else if errors.Is(beforeErr, fs.ErrNotExist) {
				undo = os.Remove(path)
			}
			switch {
			case undo != nil:
				fmt.Fprintf(stderr, "yuzu-agent: service: %s could not be put back: %s\n", rows.Printable(path), rows.Printable(undo.Error()))
			case beforeErr == nil:
				fmt.Fprintf(stdout, "put the earlier %s back\n", rows.Printable(path))
			default:
				fmt.Fprintf(stdout, "removed %s again\n", rows.Printable(path))
			}
			if systemd && errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("%w: is systemd this machine's service manager? (docs/operations.md, \"Running as a service\")", err)
			} else if systemd {
				_ = steps([]string{"/usr/bin/systemctl", "daemon-reload"})
			}
			return fail(err)
		}
	case "uninstall":
		var err error
		if systemd {
			err = steps([]string{"/usr/bin/systemctl", "disable", "--now", Name + ".service"})
		} else {
			err = steps([]string{"/bin/launchctl", "bootout", "system/" + LaunchdLabel})
		}
		// No service manager at all runs nothing the definition could start: it
		// goes. Any other failure keeps it, so that a service still running keeps
		// its definition until it is stopped.
		noManager := errors.Is(err, fs.ErrNotExist)
		if err != nil && !noManager {
			return fail(fmt.Errorf("%w; %s is kept until the service is stopped", err, path))
		}
		if noManager {
			fmt.Fprintf(stderr, "yuzu-agent: service: no service manager to stop the service (%s)\n", rows.Printable(err.Error()))
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		fmt.Fprintf(stdout, "removed %s\n", rows.Printable(path))
		if systemd && !noManager {
			if err := steps([]string{"/usr/bin/systemctl", "daemon-reload"}); err != nil {
				return fail(err)
			}
		}
	case "status":
		var err error
		if systemd {
			err = steps([]string{"/usr/bin/systemctl", "status", "--no-pager", Name + ".service"})
		} else {
			err = steps([]string{"/bin/launchctl", "print", "system/" + LaunchdLabel})
		}
		if err != nil {
			return fail(err)
		}
	}
	return exitOK
}

// writeDefinition writes a service definition atomically; a directory that could not
// be synced afterwards is no failure (the file is whole either way).
func writeDefinition(path string, b []byte) error {
	err := atomicfile.WriteMode(path, b, 0o644)
	var syncErr *atomicfile.DirSyncError
	if errors.As(err, &syncErr) {
		return nil
	}
	return err
}
