package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/yuzugo/yuzu/sdk"
)

// childEnv marks a copy of this binary started by spawn: it is no plugin but one of
// the sleeping descendants (serveChild).
const childEnv = "YUZU_HOSTILE_CHILD"

// spawn starts a child that starts a grandchild, both sleeping for an hour with the
// tag argument on their command lines (so a test can find them), writes
// `<role> <pid> 0 0` lines to pidfile, then waits for cancellation or, with
// crash=true, exits with status 3. Windows has no process groups or sessions to
// report: the job objects are what must end them.
func spawn(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	pidfile, err := req.Params.Required("pidfile")
	if err != nil {
		return sdk.Result{}, err
	}
	tag, _ := req.Params.Lookup("tag")
	exe, err := os.Executable()
	if err != nil {
		return sdk.Result{}, err
	}
	f, err := os.Create(pidfile + ".child")
	if err != nil {
		return sdk.Result{}, err
	}
	f.Close()
	cmd := exec.Command(exe, "child", tag)
	cmd.Env = append(os.Environ(), childEnv+"="+pidfile+".child")
	if err := cmd.Start(); err != nil {
		return sdk.Result{}, err
	}
	// The child writes the grandchild's pid; wait for it (bounded).
	var grand []byte
	for deadline := time.Now().Add(30 * time.Second); len(grand) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		grand, _ = os.ReadFile(pidfile + ".child")
	}
	lines := fmt.Sprintf("child %d 0 0\ngrandchild %s 0 0\n", cmd.Process.Pid, grand)
	if err := os.WriteFile(pidfile, []byte(lines), 0o644); err != nil {
		return sdk.Result{}, err
	}
	out.Row("pid", "child", strconv.Itoa(cmd.Process.Pid), "0", "0")
	if crash, _ := req.Params.Lookup("crash"); crash == "true" {
		os.Exit(3)
	}
	<-ctx.Done()
	return out.Fail("cancelled"), nil
}

// serveChild is main for a copy started by spawn: the first level starts the
// grandchild and writes its pid to the file named by childEnv; both then sleep.
func serveChild() bool {
	file := os.Getenv(childEnv)
	if file == "" {
		return false
	}
	if len(os.Args) > 1 && os.Args[1] == "child" {
		exe, _ := os.Executable()
		tag := ""
		if len(os.Args) > 2 {
			tag = os.Args[2]
		}
		cmd := exec.Command(exe, "grandchild", tag)
		cmd.Env = append(os.Environ(), childEnv+"=-")
		if err := cmd.Start(); err == nil {
			_ = os.WriteFile(file, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		}
	}
	time.Sleep(time.Hour)
	return true
}
