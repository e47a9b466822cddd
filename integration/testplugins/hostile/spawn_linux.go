package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/proctree"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// spawn leaves three kinds of descendants behind:
//
//   - group: /bin/sleep started with os/exec as is, so it stays in the plugin's own
//     process group;
//   - tool: a shell run through sdk/subprocess (its own group) that starts a sleep in
//     the background and another in the foreground, both grandchildren of the plugin;
//   - session: /usr/bin/setsid /bin/sleep, which leaves the plugin's group and session
//     while the plugin, its parent, stays alive.
//
// It writes one `<role> <pid> <pgid> <sid>` line per process to pidfile (atomically:
// the test reads it while the command still runs, because the agent prints rows only
// at the end), then waits for ctx, or with crash=true exits with status 3 a moment
// later (os.Exit: none of the SDK's cleanup runs).
func spawn(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	pidfile, err := req.Params.Required("pidfile")
	if err != nil {
		return sdk.Result{}, err
	}
	group := exec.Command("/bin/sleep", "300")
	if err := group.Start(); err != nil {
		return sdk.Result{}, err
	}
	go func() { _ = group.Wait() }()

	// Detached from the command's context, so that the handler returning does not end
	// the tool: only the plugin's own exit may.
	go func() {
		_, _ = subprocess.Run(context.WithoutCancel(ctx), subprocess.Spec{
			Argv:    []string{"/bin/sh", "-c", "/bin/sleep 300 & /bin/sleep 300; exit 0"},
			Timeout: time.Hour,
		})
	}()

	session := exec.Command("/usr/bin/setsid", "/bin/sleep", "300")
	if err := session.Start(); err != nil {
		return sdk.Result{}, err
	}
	go func() { _ = session.Wait() }()

	// Wait for the tree to settle: the shell and its two sleeps exist, and the setsid
	// child has become a sleep in a session of its own.
	self := os.Getpid()
	var tool []int
	deadline := time.Now().Add(10 * time.Second)
	for {
		t := proctree.Snapshot()
		tool = tool[:0]
		for _, c := range t.Children(self) {
			if c != group.Process.Pid && c != session.Process.Pid {
				tool = append(tool, c)
				tool = append(tool, t.Descendants(c)...)
			}
		}
		_, sid, _ := ids(session.Process.Pid)
		if len(tool) == 3 && sid == session.Process.Pid && comm(session.Process.Pid) == "sleep" && allSleep(tool[1:]) {
			break
		}
		if time.Now().After(deadline) {
			return sdk.Result{}, fmt.Errorf("descendants did not settle: tool %v, session %d sid %d", tool, session.Process.Pid, sid)
		}
		time.Sleep(10 * time.Millisecond)
	}

	var lines strings.Builder
	add := func(role string, pid int) error {
		pgid, sid, err := ids(pid)
		if err != nil {
			return err
		}
		fmt.Fprintf(&lines, "%s %d %d %d\n", role, pid, pgid, sid)
		out.Row("pid", role, strconv.Itoa(pid), strconv.Itoa(pgid), strconv.Itoa(sid))
		return nil
	}
	if err := add("plugin", self); err != nil {
		return sdk.Result{}, err
	}
	if err := add("group", group.Process.Pid); err != nil {
		return sdk.Result{}, err
	}
	for _, p := range tool {
		if err := add("tool", p); err != nil {
			return sdk.Result{}, err
		}
	}
	if err := add("session", session.Process.Pid); err != nil {
		return sdk.Result{}, err
	}
	tmp := pidfile + ".tmp"
	if err := os.WriteFile(tmp, []byte(lines.String()), 0o644); err != nil {
		return sdk.Result{}, err
	}
	if err := os.Rename(tmp, pidfile); err != nil {
		return sdk.Result{}, err
	}
	if req.Params.Bool("crash", false) {
		// Give the agent the rows first, so the crash lands mid-command: a loaded
		// machine may not run gRPC's writer for a good part of a second.
		time.Sleep(time.Second)
		os.Exit(3)
	}
	<-ctx.Done()
	return out.Fail("cancelled: " + ctx.Err().Error()), nil
}

// ids returns the process group and session of pid.
func ids(pid int) (pgid, sid int, err error) {
	if pgid, err = unix.Getpgid(pid); err != nil {
		return 0, 0, err
	}
	if sid, err = unix.Getsid(pid); err != nil {
		return 0, 0, err
	}
	return pgid, sid, nil
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

func allSleep(pids []int) bool {
	return !slices.ContainsFunc(pids, func(p int) bool { return comm(p) != "sleep" })
}

// serveChild is Windows-only (spawn_windows.go): here no copy of this binary is
// started as a descendant.
func serveChild() bool { return false }
