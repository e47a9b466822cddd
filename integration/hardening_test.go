//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// The end-to-end proofs of the agent's hardening: what runs is what was verified,
// special files where the agent expects small regular files, SIGKILL in the middle of
// a write, process trees that try to outlive the agent, a second signal, and plugin
// text that tries to forge the capture format. See docs/agent.md.

// roleEnv makes the test binary play a part instead of running tests, when a test
// re-executes it as another user (see init).
const roleEnv = "YUZU_INTEGRATION_ROLE"

// The writer roles of TestVerifiedBytesRun, played as the unprivileged user.
const (
	// roleDeniedWriter tries every way an unprivileged user has to put other bytes at
	// a root-owned plugin binary in a root-owned dir.
	roleDeniedWriter = "denied-writer"
	// roleOwnerWriter owns the plugin binary and rewrites it in place, back and forth
	// between other bytes and the listed ones.
	roleOwnerWriter = "owner-writer"
	// roleSourceSwapper puts its own bytes at a file offered to `plugins add`, by
	// every way the file's directory lets it, all the time.
	roleSourceSwapper = "source-swapper"
)

// Environment of the writer roles.
const (
	targetEnv = "YUZU_INTEGRATION_TARGET" // the plugin binary to replace
	sourceEnv = "YUZU_INTEGRATION_SOURCE" // the bytes to put there: another valid plugin
	stageEnv  = "YUZU_INTEGRATION_STAGE"  // a directory the writer owns
)

// nobody is the unprivileged user the writers run as (uid and gid).
const nobody = 65534

// A role runs before TestMain, which would otherwise build every binary first.
func init() {
	switch role := os.Getenv(roleEnv); role {
	case roleDeniedWriter, roleOwnerWriter, roleSourceSwapper:
		os.Exit(runWriter(role))
	}
}

// writerReport is what a writer did, printed as JSON when it stops.
type writerReport struct {
	UID       int               `json:"uid"`
	Rounds    int               `json:"rounds"`
	Attempts  map[string]int    `json:"attempts"`  // by way of changing the binary
	Succeeded map[string]int    `json:"succeeded"` // of those, the ones the system allowed
	Busy      int               `json:"busy"`      // writes refused with ETXTBSY: the file was running
	Samples   map[string]string `json:"samples"`   // the first error of each way
}

// runWriter plays a writer role until its stdin closes, then prints its report.
func runWriter(role string) int {
	target, source, stage := os.Getenv(targetEnv), os.Getenv(sourceEnv), os.Getenv(stageEnv)
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "writer:", err)
		return 2
	}
	evil, err := os.ReadFile(source)
	if err != nil {
		return fail(err)
	}
	rep := writerReport{UID: os.Getuid(), Attempts: map[string]int{}, Succeeded: map[string]int{}, Samples: map[string]string{}}
	try := func(way string, err error) {
		rep.Attempts[way]++
		switch {
		case err == nil:
			rep.Succeeded[way]++
		case errors.Is(err, syscall.ETXTBSY):
			rep.Busy++
		}
		if _, seen := rep.Samples[way]; !seen && err != nil {
			rep.Samples[way] = err.Error()
		}
	}
	var step func()
	switch role {
	case roleDeniedWriter:
		dir := filepath.Dir(target)
		staged := filepath.Join(stage, filepath.Base(target))
		// A complete plugin dir of the writer's own, whose manifest lists the other
		// bytes under the target's name: what replacing the whole dir would plant.
		stagedDir := filepath.Join(stage, "plugins")
		if err := os.Mkdir(stagedDir, 0o755); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(filepath.Join(stagedDir, filepath.Base(target)), evil, 0o755); err != nil {
			return fail(err)
		}
		sum, err := fileSHA256(source)
		if err != nil {
			return fail(err)
		}
		if err := os.WriteFile(filepath.Join(stagedDir, "catalog.json"), catalogOf(map[string]string{filepath.Base(target): sum}), 0o644); err != nil {
			return fail(err)
		}
		step = func() {
			try("write in place", writeInPlace(target, evil))
			if _, err := os.Lstat(staged); err != nil {
				_ = os.WriteFile(staged, evil, 0o755)
			}
			try("rename over", os.Rename(staged, target))
			try("create beside", createBeside(dir, evil))
			try("unlink", os.Remove(target))
			try("chmod", os.Chmod(target, 0o777))
			try("move dir away", os.Rename(dir, filepath.Join(stage, "moved")))
			try("replace dir", os.Rename(stagedDir, dir))
			time.Sleep(time.Millisecond) // leave the agent some CPU
		}
	case roleOwnerWriter:
		good, err := os.ReadFile(target)
		if err != nil {
			return fail(err)
		}
		step = func() {
			try("write in place", writeInPlace(target, evil))
			try("write back", writeInPlace(target, good))
			try("chmod", os.Chmod(target, 0o755))
			time.Sleep(time.Millisecond)
		}
	case roleSourceSwapper:
		staged := filepath.Join(stage, "swap")
		step = func() {
			if _, err := os.Lstat(staged); err != nil {
				_ = os.WriteFile(staged, evil, 0o755)
			}
			try("rename over", os.Rename(staged, target))
			try("write in place", writeInPlace(target, evil))
			try("chmod", os.Chmod(target, 0o755))
			try("unlink", os.Remove(target))
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
			if err == nil {
				_, err = f.Write(evil)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			try("create", err)
			time.Sleep(time.Millisecond)
		}
	default:
		return fail(fmt.Errorf("unknown role %q", role))
	}
	var stop atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	fmt.Println("ready")
	for !stop.Load() {
		step()
		rep.Rounds++
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return fail(err)
	}
	return 0
}

func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func createBeside(dir string, data []byte) error {
	f, err := os.OpenFile(filepath.Join(dir, "yuzu-plugin-planted"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// unprivTree is a root-owned tree the user nobody can read but not change: base (0755)
// holds the plugin dir (0755) with a root-owned copy of the tags plugin listed in its
// manifest, the sleeper plugin's bytes for the writer to plant, a copy of this test
// binary for it to run, and a stage directory it owns.
type unprivTree struct {
	base, dir, target, source, stage, self string
}

func newUnprivTree(t *testing.T) *unprivTree {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the binary must be root-owned and the writer must run as uid 65534")
	}
	base, err := os.MkdirTemp("", "yuzu-verified-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	// The writer must reach the tree: every parent must be searchable by others.
	for p := filepath.Dir(base); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("%s (mode %04o) cannot be searched by uid %d; set TMPDIR to a directory it can reach", p, fi.Mode().Perm(), nobody)
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	tr := &unprivTree{base: base, dir: filepath.Join(base, "plugins"), source: filepath.Join(base, "sleeper.bytes"),
		stage: filepath.Join(base, "stage"), self: filepath.Join(base, "integration.test")}
	tr.target = filepath.Join(tr.dir, tagsBin)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return os.Chmod(base, 0o755) },
		func() error { return os.Mkdir(tr.dir, 0o755) },
		func() error { return os.Chmod(tr.dir, 0o755) },
		// A copy: one test gives it to nobody, which must not touch the built binary.
		func() error { return copyFile(binPath(tagsBin), tr.target, 0o755) },
		func() error {
			return writeExact(filepath.Join(tr.dir, "catalog.json"), catalogOf(map[string]string{tagsBin: built.sums[tagsBin]}), 0o644)
		},
		func() error { return copyFile(binPath(sleeperBin), tr.source, 0o644) },
		func() error { return linkOrCopy(self, tr.self, 0o755) },
		func() error { return os.Mkdir(tr.stage, 0o700) },
		func() error { return os.Chown(tr.stage, nobody, nobody) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// linkOrCopy makes dst a hard link to src, or a copy of it with mode when they are on
// different file systems. A link is better for a binary that is run soon after: a
// copy's write descriptor can be inherited for a moment by a child forked meanwhile
// (other tests start processes all the time), and exec then fails with ETXTBSY.
func linkOrCopy(src, dst string, mode os.FileMode) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst, mode)
}

// writeExact writes data to path with exactly mode.
func writeExact(path string, data []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// writer is a running writer process.
type writer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *lockedBuffer
}

// startWriter runs this test binary as uid nobody in role and waits until it works.
func startWriter(t *testing.T, tr *unprivTree, role string) *writer {
	t.Helper()
	var w *writer
	var err error
	// A copied test binary may briefly be held open for writing by a child another
	// test forked (ETXTBSY, see linkOrCopy): try again with a fresh command.
	for i := 0; i == 0 || errors.Is(err, syscall.ETXTBSY) && i < 100; i++ {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		w, err = newWriter(tr, role)
	}
	if err != nil {
		t.Fatalf("start the writer as uid %d: %v", nobody, err)
	}
	cmd := w.cmd
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := w.stdout.ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if line != "ready\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("writer did not start: %q\nstderr:\n%s", line, w.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("writer not ready after 30 s\nstderr:\n%s", w.stderr.String())
	}
	return w
}

// newWriter starts this test binary as uid nobody in role.
func newWriter(tr *unprivTree, role string) (*writer, error) {
	cmd := exec.Command(tr.self)
	cmd.Env = []string{roleEnv + "=" + role, targetEnv + "=" + tr.target, sourceEnv + "=" + tr.source, stageEnv + "=" + tr.stage, "PATH=/usr/bin:/bin"}
	cmd.Dir = tr.stage
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	w := &writer{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = w.stderr
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w.stdout = bufio.NewReader(out)
	return w, cmd.Start()
}

// stop ends the writer and returns its report.
func (w *writer) stop(t *testing.T) writerReport {
	t.Helper()
	_ = w.stdin.Close()
	var rep writerReport
	derr := json.NewDecoder(w.stdout).Decode(&rep)
	werr := w.cmd.Wait()
	if derr != nil || werr != nil {
		t.Fatalf("writer: report %v, exit %v\nstderr:\n%s", derr, werr, w.stderr.String())
	}
	return rep
}

// startTally counts what plugin starts answered.
type startTally struct {
	mu         sync.Mutex
	starts     int
	tags       int      // answered as tags: the verified bytes ran
	refused    int      // refused before running
	unverified int      // another plugin answered: bytes that were never verified ran
	ran        []string // what the unverified runs answered
	reasons    []string // distinct refusal reasons
	other      []string // anything else
}

func (s *startTally) String() string {
	return fmt.Sprintf("%d starts: %d tags answers, %d refusals, %d unverified runs, %d other outcomes",
		s.starts, s.tags, s.refused, s.unverified, len(s.other))
}

// startTags starts the tags plugin of dir through a new in-process supervisor, asks it
// to describe itself, stops it, and records which plugin answered.
func (s *startTally) startTags(dir, dataDir string) {
	name, err := func() (string, error) {
		sup, err := supervisor.New(supervisor.Options{PluginDir: dir, DataDir: dataDir, Logger: hclog.NewNullLogger(), StartTimeout: 60 * time.Second})
		if err != nil {
			return "", err
		}
		defer sup.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		m, err := sup.Describe(ctx, "tags")
		return m.Name, err
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starts++
	var refused *supervisor.RefusedError
	switch {
	case err == nil && name == "tags":
		s.tags++
	case err == nil:
		s.unverified++
		s.ran = append(s.ran, "answered as "+name)
	case errors.As(err, &refused):
		s.refused++
		if !slices.Contains(s.reasons, refused.Reason) {
			s.reasons = append(s.reasons, refused.Reason)
		}
	case strings.Contains(err.Error(), "says its name is"):
		// The binary ran far enough to describe itself as another plugin.
		s.unverified++
		s.ran = append(s.ran, err.Error())
	default:
		s.other = append(s.other, err.Error())
	}
}

// parallelDo runs fn(0..n-1) on workers goroutines.
func parallelDo(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// TestVerifiedBytesRun: only the bytes whose SHA-256 the agent checked ever run, while
// someone tries to swap them. An unprivileged user cannot change a root-owned binary
// in a root-owned dir by any means; a binary that user owns is refused on every start;
// and root renaming another plugin over the binary during hundreds of starts gets
// either the verified plugin or a checksum refusal, never the other plugin.
func TestVerifiedBytesRun(t *testing.T) {
	t.Parallel()

	t.Run("unprivileged writer is denied", func(t *testing.T) {
		t.Parallel()
		tr := newUnprivTree(t)
		w := startWriter(t, tr, roleDeniedWriter)
		var tally startTally
		data := t.TempDir()
		const starts = 150
		parallelDo(starts, 3, func(int) { tally.startTags(tr.dir, data) })
		// The real agent too, start to finish.
		var execs, execOK int
		for range 10 {
			r := runAgent(t, nil, "--plugin-dir", tr.dir, "--data-dir", data, "exec", "tags", "count")
			execs++
			if r.code == 0 && r.stdout == "count|0\n"+undeclared {
				execOK++
			} else {
				t.Errorf("exec tags count while the writer works:\n%s", r)
			}
		}
		rep := w.stop(t)
		t.Logf("writer uid %d, %d rounds; attempts %v; succeeded %v; errors %v", rep.UID, rep.Rounds, rep.Attempts, rep.Succeeded, rep.Samples)
		t.Logf("%s; %d/%d exec runs answered count|0", &tally, execOK, execs)
		if rep.UID != nobody {
			t.Errorf("the writer ran as uid %d, want %d", rep.UID, nobody)
		}
		for _, way := range []string{"write in place", "rename over", "create beside", "unlink", "chmod", "move dir away", "replace dir"} {
			if rep.Attempts[way] == 0 {
				t.Errorf("the writer never tried %q", way)
			}
			if rep.Succeeded[way] != 0 {
				t.Errorf("an unprivileged user changed the plugin dir: %q succeeded %d of %d times", way, rep.Succeeded[way], rep.Attempts[way])
			}
		}
		if tally.starts != starts || tally.tags != starts {
			t.Errorf("want every start answered by the verified tags plugin: %s; refusals %q; unverified %q; other %q", &tally, tally.reasons, tally.ran, tally.other)
		}
		if sum, err := fileSHA256(tr.target); err != nil || sum != built.sums[tagsBin] {
			t.Errorf("the binary changed: sha256 %s, %v", sum, err)
		}
		ents, _ := os.ReadDir(tr.dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if strings.Join(names, ",") != "catalog.json,"+tagsBin {
			t.Errorf("plugin dir holds %v", names)
		}
	})

	t.Run("binary owned by the writer is refused", func(t *testing.T) {
		t.Parallel()
		tr := newUnprivTree(t)
		if err := os.Chown(tr.target, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		w := startWriter(t, tr, roleOwnerWriter)
		var tally startTally
		data := t.TempDir()
		// A refusal costs no process, so the starts are spread over a few seconds to
		// overlap many of the writer's rewrites.
		starts := 0
		for begin := time.Now(); starts < 100 || time.Since(begin) < 2*time.Second; starts++ {
			tally.startTags(tr.dir, data)
			time.Sleep(10 * time.Millisecond)
		}
		wantReason := fmt.Sprintf("owned by uid %d, not by root or by the agent's user (uid 0)", nobody)
		var execs, execRefused int
		for range 5 {
			r := runAgent(t, nil, "--plugin-dir", tr.dir, "--data-dir", data, "exec", "tags", "count")
			execs++
			if want := agentError("plugin binary " + tr.target + " refused: " + wantReason); r.stdout == want && r.code == 1 {
				execRefused++
			} else {
				t.Errorf("exec tags count of a binary owned by uid %d: want %q:\n%s", nobody, want, r)
			}
		}
		rep := w.stop(t)
		t.Logf("writer uid %d, %d rounds; attempts %v; succeeded %v; ETXTBSY %d", rep.UID, rep.Rounds, rep.Attempts, rep.Succeeded, rep.Busy)
		t.Logf("%s; %d/%d exec runs refused", &tally, execRefused, execs)
		// The owner really can rewrite the bytes: without the ownership check, some
		// start would hash the listed bytes and then run the writer's.
		if rep.Attempts["write in place"] == 0 || rep.Succeeded["write in place"] == 0 || rep.Succeeded["write back"] == 0 {
			t.Errorf("the owner could not rewrite its binary, so this proves nothing: %+v", rep)
		}
		if rep.Busy != 0 {
			t.Errorf("%d writes found the binary running (ETXTBSY)", rep.Busy)
		}
		if tally.refused != starts || len(tally.reasons) != 1 || tally.reasons[0] != wantReason {
			t.Errorf("want all %d starts refused with %q: %s; reasons %q; unverified %q; other %q", starts, wantReason, &tally, tally.reasons, tally.ran, tally.other)
		}
	})

	t.Run("root renames another plugin over it during starts", func(t *testing.T) {
		t.Parallel()
		base := t.TempDir()
		dir := filepath.Join(base, "plugins")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, tagsBin)
		hold := filepath.Join(base, "other-plugin")
		// Renames never change the files themselves, so links to the built binaries
		// do (and spare the copies' ETXTBSY race, see linkOrCopy).
		if err := linkOrCopy(binPath(tagsBin), target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := linkOrCopy(binPath(sleeperBin), hold, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "catalog.json"), string(catalogOf(map[string]string{tagsBin: built.sums[tagsBin]})), 0o644)

		// The swapper exchanges the two names atomically (RENAME_EXCHANGE), so the
		// path always holds a complete, root-owned 0755 binary: the tags plugin or the
		// sleeper plugin, alternately, a few hundred microseconds each.
		var stop atomic.Bool
		var swaps atomic.Int64
		swapErr := make(chan error, 1)
		go func() {
			defer close(swapErr)
			for !stop.Load() {
				if err := unix.Renameat2(unix.AT_FDCWD, hold, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE); err != nil {
					swapErr <- err
					return
				}
				swaps.Add(1)
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			}
		}()
		var tally startTally
		data := t.TempDir()
		const starts = 500
		parallelDo(starts, 4, func(int) { tally.startTags(dir, data) })
		stop.Store(true)
		if err := <-swapErr; err != nil {
			t.Fatalf("swapping the binaries: %v", err)
		}
		t.Logf("%s; %d swaps", &tally, swaps.Load())
		t.Logf("refusal reasons: %q", tally.reasons)
		if tally.unverified != 0 {
			t.Errorf("%d starts ran bytes that were never verified: %q", tally.unverified, tally.ran)
		}
		if len(tally.other) != 0 {
			t.Errorf("unexpected outcomes: %q", tally.other)
		}
		if tally.starts != starts || tally.tags+tally.refused != starts {
			t.Errorf("want every start answered as tags or refused: %s", &tally)
		}
		// A refusal must have hashed exactly the other plugin (never a torn mix), and
		// both outcomes must have happened, or the race was not run.
		want := "SHA-256 " + built.sums[sleeperBin] + " does not match catalog.json (" + built.sums[tagsBin] + "); if you trust this binary, run `yuzu-agent plugins add " + target + "`"
		if len(tally.reasons) > 0 && (len(tally.reasons) != 1 || tally.reasons[0] != want) {
			t.Errorf("refusal reasons %q, want only %q", tally.reasons, want)
		}
		if tally.tags == 0 || tally.refused == 0 {
			t.Errorf("the swap never raced a start (%s): the test proves nothing", &tally)
		}
	})

	// Root (or a package manager) writing a new build over the binary in place: the
	// bytes change under the same inode between the agent's hash and its exec. Only a
	// sealed copy of the hashed bytes keeps every start honest.
	t.Run("root overwrites it in place during starts", func(t *testing.T) {
		t.Parallel()
		tally, rounds := overwriteDuringStarts(t, 300)
		t.Logf("%s; %v", tally, rounds)
		t.Logf("refusal reasons: %d distinct", len(tally.reasons))
		if tally.unverified != 0 {
			t.Errorf("%d starts ran bytes that were never verified: %q", tally.unverified, tally.ran)
		}
		if len(tally.other) != 0 {
			t.Errorf("%d starts failed another way (torn bytes ran?): %q", len(tally.other), tally.other)
		}
		if tally.starts != 300 || tally.tags+tally.refused != 300 {
			t.Errorf("want every start answered as tags or refused: %s", tally)
		}
		if tally.tags == 0 || tally.refused == 0 {
			t.Errorf("the writes never raced a start (%s): the test proves nothing", tally)
		}
	})
}

// overwriteDuringStarts runs starts starts of the tags plugin while a writer keeps
// writing the sleeper plugin's bytes over the binary in place (dd conv=notrunc), and
// then the tags bytes back with a truncating write (a plain cp), and returns the tally
// and how many writes of each kind went through (and how many found the file running,
// ETXTBSY).
func overwriteDuringStarts(t *testing.T, starts int) (*startTally, map[string]int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, tagsBin)
	tagsBytes, err := os.ReadFile(binPath(tagsBin))
	if err != nil {
		t.Fatal(err)
	}
	otherBytes, err := os.ReadFile(binPath(sleeperBin))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, target, string(tagsBytes), 0o755)
	writeFile(t, filepath.Join(dir, "catalog.json"), string(catalogOf(map[string]string{tagsBin: built.sums[tagsBin]})), 0o644)

	var stop atomic.Bool
	var mu sync.Mutex
	rounds := map[string]int{}
	done := make(chan struct{})
	var writeOnce func(kind string, flags int, b []byte) bool
	go func() {
		defer close(done)
		// write retries while the file is running (ETXTBSY), as an installer would:
		// the tags bytes must come back.
		write := func(kind string, flags int, b []byte) {
			for !writeOnce(kind, flags, b) && !stop.Load() {
				time.Sleep(100 * time.Microsecond)
			}
		}
		writeOnce = func(kind string, flags int, b []byte) bool {
			f, err := os.OpenFile(target, os.O_WRONLY|flags, 0)
			if err == nil {
				_, err = f.Write(b)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				rounds[kind]++
			case errors.Is(err, syscall.ETXTBSY):
				rounds[kind+" ETXTBSY"]++
			default:
				rounds[kind+" error: "+err.Error()]++
			}
			return err == nil
		}
		// The tags bytes stay in place most of the time, so that many starts hash
		// them and pass, and the other bytes come in during those starts.
		for !stop.Load() {
			time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
			write("in place", 0, otherBytes)
			time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
			write("cp back", os.O_TRUNC, tagsBytes)
		}
	}()
	tally := &startTally{}
	data := t.TempDir()
	parallelDo(starts, 3, func(int) { tally.startTags(dir, data) })
	stop.Store(true)
	<-done
	return tally, rounds
}

// timedRun is one agent process run with a safety timeout.
type timedRun struct {
	run
	took     time.Duration
	timedOut bool
}

// runAgentTimed runs the agent like runAgent but kills it after limit and says how
// long it took.
func runAgentTimed(t *testing.T, limit time.Duration, args ...string) timedRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath(agentBin), args...)
	cmd.Env = baseEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	r := timedRun{run: run{stdout: stdout.String(), stderr: stderr.String()}, took: time.Since(start), timedOut: ctx.Err() != nil}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && exitErr.Exited():
		r.code = exitErr.ExitCode()
	default:
		r.code = -1
	}
	return r
}

// makeSpecial puts a special file of kind at path: a FIFO, a symbolic link to
// /dev/zero, a directory or a bound Unix socket.
func makeSpecial(t *testing.T, kind, path string) {
	t.Helper()
	var err error
	switch kind {
	case "FIFO":
		err = syscall.Mkfifo(path, 0o644)
	case "symlink":
		err = os.Symlink("/dev/zero", path)
	case "directory":
		err = os.Mkdir(path, 0o755)
	case "socket":
		// A socket path is limited to 108 bytes: bind it in a short directory and
		// move it into place; it stays bound while the listener is open.
		short, merr := os.MkdirTemp("", "ys")
		if merr != nil {
			t.Fatal(merr)
		}
		t.Cleanup(func() { _ = os.RemoveAll(short) })
		l, lerr := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(short, "s"), Net: "unix"})
		if lerr != nil {
			t.Fatal(lerr)
		}
		l.SetUnlinkOnClose(false)
		t.Cleanup(func() { _ = l.Close() })
		err = os.Rename(filepath.Join(short, "s"), path)
	default:
		t.Fatalf("unknown kind %s", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestSpecialFilesAtAgentPaths: a FIFO, a symbolic link to /dev/zero, a directory or a
// Unix socket where the agent reads its id, its manifest or a plugin binary makes
// `exec` answer at once with an error row naming the path: never a hang, never an
// endless read. It does not run in parallel, so that "at once" is measured on an idle
// machine.
func TestSpecialFilesAtAgentPaths(t *testing.T) {
	// How the agent names each kind of file; safefile.Describe is the one place for that
	// wording.
	article := map[string]string{
		"FIFO":      safefile.Describe(fs.ModeNamedPipe),
		"symlink":   safefile.Describe(fs.ModeSymlink),
		"directory": safefile.Describe(fs.ModeDir),
		"socket":    safefile.Describe(fs.ModeSocket),
	}
	places := []struct {
		name string
		path func(w *world) string
		// want says whether the error message is the right one for kind at path.
		want func(w *world, kind, path, msg string) bool
	}{
		{"agent_id", func(w *world) string { return filepath.Join(w.dataDir, "agent_id") },
			func(_ *world, kind, path, msg string) bool {
				return msg == "agent id file: "+path+" is "+article[kind]+": not a regular file"
			}},
		{"catalog.json", func(w *world) string { return filepath.Join(w.pluginDir, "catalog.json") },
			func(w *world, _, path, msg string) bool {
				return strings.HasPrefix(msg, "plugin binary "+filepath.Join(w.pluginDir, tagsBin)+" refused: unusable catalog: ") && strings.Contains(msg, path)
			}},
		// The manifest of older agents, read once to make the catalog.
		{"plugins.sha256", func(w *world) string {
			if err := os.Remove(filepath.Join(w.pluginDir, "catalog.json")); err != nil {
				panic(err)
			}
			return filepath.Join(w.pluginDir, "plugins.sha256")
		},
			func(w *world, _, path, msg string) bool {
				return strings.HasPrefix(msg, "plugin binary "+filepath.Join(w.pluginDir, tagsBin)+" refused: unusable catalog: ") && strings.Contains(msg, path)
			}},
		{tagsBin, func(w *world) string { return filepath.Join(w.pluginDir, tagsBin) },
			func(_ *world, kind, path, msg string) bool {
				return msg == "plugin binary "+path+" refused: is "+article[kind]+", not a regular file"
			}},
	}
	for _, p := range places {
		for _, kind := range []string{"FIFO", "symlink", "directory", "socket"} {
			t.Run(p.name+"/"+kind, func(t *testing.T) {
				w := newWorld(t, tagsBin)
				path := p.path(w)
				if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				makeSpecial(t, kind, path)
				r := runAgentTimed(t, 10*time.Second, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "exec", "tags", "count")
				if r.timedOut {
					t.Fatalf("the agent hung: killed after %s\n%s", r.took, r.run)
				}
				msg, ok := strings.CutPrefix(r.stdout, "error|")
				msg, ok2 := strings.CutSuffix(msg, "\n"+undeclared+rc1)
				if r.code != 1 || !ok || !ok2 || strings.Contains(msg, "\n") || !p.want(w, kind, path, msg) {
					t.Errorf("want exit 1 and one error row naming %s as %s:\n%s", path, article[kind], r.run)
				}
			})
		}
	}
}

// flatStringObject decodes data, which must be a JSON object whose values are all
// strings (what tags.json must always be; `null` or a nested value is not).
func flatStringObject(data []byte) (map[string]string, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %.60q", data)
	}
	out := make(map[string]string, len(obj))
	for k, val := range obj {
		s, ok := val.(string)
		if !ok {
			return nil, fmt.Errorf("value of %q is %T, not a string", k, val)
		}
		out[k] = s
	}
	return out, nil
}

// cmdline returns the command line of pid with NULs as spaces ("" when gone).
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}

// processesMentioning lists the live processes whose executable is under dir or whose
// command line names it: an agent started with --plugin-dir dir (or a child it forked
// and has not yet executed), or a plugin run from dir.
func processesMentioning(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, cl := exePath(pid), cmdline(pid)
		if (strings.HasPrefix(exe, dir+"/") || strings.Contains(cl, dir)) && alive(pid) {
			out = append(out, fmt.Sprintf("%d (%s, state %s)", pid, strings.TrimSpace(cl), procState(pid)))
		}
	}
	return out
}

// TestKillDuringTagsSet: 500 SIGKILLs of `yuzu-agent exec tags set`, each while two
// other agents set tags in the same data dir. tags.json stays a flat object of strings
// at every check, no acknowledged set is lost, no temp file outlives the next run, and
// 2 s after each kill nothing of the killed agent is left.
func TestKillDuringTagsSet(t *testing.T) {
	t.Parallel()
	const (
		rounds   = 500
		perRound = 3 // concurrent agents per round; one of them is killed
		inFlight = 3 // rounds at once
	)
	w := newWorld(t, tagsBin)
	shared := w.pluginDir
	// Each round's victim runs from a plugin dir of its own, so whatever it leaves
	// behind can be told from the other agents' processes by its path.
	victimDirs := make([]string, rounds)
	for r := range victimDirs {
		victimDirs[r] = pluginDir(t, tagsBin)
	}
	storePath := filepath.Join(w.dataDir, "tags.json")

	var (
		mu            sync.Mutex
		acked         = map[string]string{} // acknowledged sets
		victimKeys    = map[string]string{} // sets whose agent was killed
		fileChecks    int
		invalid       []string
		landed        int // kills that ended the agent
		withChild     int // of those, with its plugin child running at that moment
		finishedFirst int // victims that had exited before the kill
		problems      []string
		leftovers     []string
	)
	var checks sync.WaitGroup
	round := func(r int) {
		victim := rand.IntN(perRound)
		cmds := make([]*exec.Cmd, perRound)
		outs := make([]*bytes.Buffer, perRound)
		errs := make([]*bytes.Buffer, perRound)
		keys := make([]string, perRound)
		for i := range cmds {
			dir := shared
			if i == victim {
				dir = victimDirs[r]
			}
			keys[i] = fmt.Sprintf("r%03dp%d", r, i)
			cmds[i] = exec.Command(binPath(agentBin), "--plugin-dir", dir, "--data-dir", w.dataDir, "exec", "tags", "set", "key="+keys[i], "value=v-"+keys[i])
			cmds[i].Env = baseEnv()
			outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
			cmds[i].Stdout, cmds[i].Stderr = outs[i], errs[i]
			cmds[i].WaitDelay = 5 * time.Second
			if err := cmds[i].Start(); err != nil {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("round %d: start: %v", r, err))
				mu.Unlock()
				for _, c := range cmds[:i] {
					_ = c.Process.Kill()
					_ = c.Wait()
				}
				return
			}
		}
		// Kill at a random moment: in even rounds within 50 ms of the start (mostly
		// before or while the plugin starts), in odd rounds within 60 ms of the plugin
		// child appearing (its handshake, the set, the reply, the exit).
		vpid := cmds[victim].Process.Pid
		vplugin := filepath.Join(victimDirs[r], tagsBin)
		if r%2 == 0 {
			time.Sleep(rand.N(50 * time.Millisecond))
		} else {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
				if procState(vpid) == "Z" || slices.ContainsFunc(childrenOf(vpid), func(pid int) bool { return runs(pid, vplugin) }) {
					break
				}
			}
			time.Sleep(rand.N(60 * time.Millisecond))
		}
		child := slices.ContainsFunc(childrenOf(vpid), func(pid int) bool { return runs(pid, vplugin) })
		_ = cmds[victim].Process.Signal(syscall.SIGKILL)
		killedAt := time.Now()
		for i, c := range cmds {
			_ = c.Wait()
			st := c.ProcessState
			ws, _ := st.Sys().(syscall.WaitStatus)
			want := "tag_set|" + keys[i] + "|v-" + keys[i] + "\n" + undeclared
			mu.Lock()
			switch {
			case i == victim && ws.Signaled() && ws.Signal() == syscall.SIGKILL:
				landed++
				if child {
					withChild++
				}
				victimKeys[keys[i]] = "v-" + keys[i]
			case st.ExitCode() == 0 && outs[i].String() == want:
				acked[keys[i]] = "v-" + keys[i]
				if i == victim {
					finishedFirst++
				}
			default:
				problems = append(problems, fmt.Sprintf("round %d agent %d (victim %v): exit %d\nstdout %q\nstderr %s", r, i, i == victim, st.ExitCode(), outs[i].String(), errs[i].String()))
			}
			mu.Unlock()
		}
		// The file between rounds (other rounds may be writing it right now).
		data, err := os.ReadFile(storePath)
		mu.Lock()
		fileChecks++
		if err != nil && (!errors.Is(err, fs.ErrNotExist) || len(acked) > 0) {
			invalid = append(invalid, fmt.Sprintf("after round %d: %v", r, err))
		} else if err == nil {
			if _, perr := flatStringObject(data); perr != nil {
				invalid = append(invalid, fmt.Sprintf("after round %d: %v", r, perr))
			}
		}
		mu.Unlock()
		checks.Add(1)
		go func() {
			defer checks.Done()
			time.Sleep(time.Until(killedAt.Add(2 * time.Second)))
			if left := processesMentioning(victimDirs[r]); len(left) > 0 {
				mu.Lock()
				leftovers = append(leftovers, fmt.Sprintf("round %d: %v", r, left))
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	parallelDo(rounds, inFlight, round)
	checks.Wait()
	took := time.Since(start)

	var tmpBefore []string
	listTemps := func() []string {
		ents, err := os.ReadDir(w.dataDir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "tags.json.tmp.") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	tmpBefore = listTemps()
	data, err := os.ReadFile(storePath)
	if err != nil {
		t.Fatal(err)
	}
	final, err := flatStringObject(data)
	if err != nil {
		t.Fatalf("tags.json after the rounds: %v", err)
	}
	w.expect(fmt.Sprintf("count|%d\n", len(final))+undeclared, 0, "tags", "count")
	tmpAfter := listTemps()
	var lost []string
	for k, v := range acked {
		if final[k] != v {
			lost = append(lost, k)
		}
	}
	var victimApplied int
	for k := range victimKeys {
		if _, ok := final[k]; ok {
			victimApplied++
		}
	}
	slices.Sort(lost)
	t.Logf("%d rounds of %d agents in %s: %d kills landed (%d with the plugin child running, %d agents had already finished); "+
		"%d acknowledged sets, %d lost; %d of the killed agents' sets reached the file anyway; %d keys in tags.json; "+
		"%d file checks, %d invalid; %d temp files before the last run, %d after; %d kills left processes behind",
		rounds, perRound, took.Round(time.Millisecond), landed, withChild, finishedFirst,
		len(acked), len(lost), victimApplied, len(final), fileChecks, len(invalid), len(tmpBefore), len(tmpAfter), len(leftovers))
	for _, p := range problems {
		t.Errorf("unexpected answer: %s", p)
	}
	if len(invalid) > 0 {
		t.Errorf("%d checks found tags.json invalid: %q", len(invalid), invalid)
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged sets lost: %v", len(lost), lost)
	}
	if len(tmpAfter) > 0 {
		t.Errorf("temp files left after a normal run: %v", tmpAfter)
	}
	if len(leftovers) > 0 {
		t.Errorf("processes of a killed agent alive 2 s after the kill: %q", leftovers)
	}
	if landed == 0 || withChild == 0 {
		t.Errorf("no kill landed while a plugin child ran (%d landed): the test proves nothing", landed)
	}
	for k := range final {
		if _, ok := acked[k]; !ok {
			if _, ok := victimKeys[k]; !ok {
				t.Errorf("tags.json holds %q, which nobody set", k)
			}
		}
	}
}

// spawned is one process the hostile plugin's spawn action reported.
type spawned struct {
	role           string
	pid, pgid, sid int
}

func readSpawned(path string) ([]spawned, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []spawned
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var s spawned
		if _, err := fmt.Sscanf(line, "%s %d %d %d", &s.role, &s.pid, &s.pgid, &s.sid); err != nil {
			return nil, fmt.Errorf("pid file line %q: %w", line, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// TestGrandchildrenDieWithAgent: what a plugin starts dies with it, however it was
// started: a child left in the plugin's process group, a tool run through
// sdk/subprocess with a background grandchild, and a child that moved into a session
// of its own while the plugin lives. Both when the agent is killed (SIGKILL) and when
// the plugin crashes (os.Exit) while the agent keeps running, nothing is left 2 s later.
func TestGrandchildrenDieWithAgent(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		name := "agent killed"
		if crash {
			name = "plugin crashed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The agent's end races the plugin's cleanup, so one run can pass by
			// luck: each way is tried several times.
			for i := range 8 {
				if !t.Run(fmt.Sprint("run ", i+1), func(t *testing.T) { spawnAndEnd(t, crash) }) {
					break
				}
			}
		})
	}
}

// spawnAndEnd runs the hostile plugin's spawn action through the agent, ends the
// agent (SIGKILL) or the plugin (crash=true), and checks that every process the
// plugin started is gone 2 s after the agent exited.
func spawnAndEnd(t *testing.T, crash bool) {
	w := newWorld(t, hostileBin)
	pidfile := filepath.Join(t.TempDir(), "pids")
	args := []string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "exec", "hostile", "spawn", "pidfile=" + pidfile}
	if crash {
		args = append(args, "crash=true")
	}
	cmd := exec.Command(binPath(agentBin), args...)
	cmd.Env = baseEnv()
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	var procs []spawned
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if procs, err = readSpawned(pidfile); err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("no pid file: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Whatever this test proves or not, the sleeps must not outlive it.
	t.Cleanup(func() {
		for _, p := range procs {
			if p.role != "plugin" && alive(p.pid) && strings.HasPrefix(cmdline(p.pid), "/bin/sleep 300") {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	// The three ways are really there: a sleep in the plugin's group, a shell in a
	// group of its own with two sleeps, and a sleep in a session of its own.
	roles := map[string][]spawned{}
	for _, p := range procs {
		roles[p.role] = append(roles[p.role], p)
	}
	plugin := roles["plugin"]
	if len(plugin) != 1 || len(roles["group"]) != 1 || len(roles["tool"]) != 3 || len(roles["session"]) != 1 {
		t.Fatalf("spawn reported %+v", procs)
	}
	pp := plugin[0]
	tool := roles["tool"][0]
	if g := roles["group"][0]; g.pgid != pp.pid {
		t.Errorf("group child %+v is not in the plugin's group %d", g, pp.pid)
	}
	if tool.pgid != tool.pid || tool.pgid == pp.pgid || roles["tool"][1].pgid != tool.pid || roles["tool"][2].pgid != tool.pid {
		t.Errorf("tool processes %+v are not in a group of the tool's own", roles["tool"])
	}
	if s := roles["session"][0]; s.sid != s.pid || s.sid == pp.sid {
		t.Errorf("session child %+v is not in a session of its own", s)
	}

	if crash {
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("the agent did not answer the crash\nstderr:\n%s", stderr.String())
		}
		var rows strings.Builder
		for _, p := range procs {
			fmt.Fprintf(&rows, "pid|%s|%d|%d|%d\n", p.role, p.pid, p.pgid, p.sid)
		}
		want := rows.String() + agentError("plugin crashed: hostile exited during the command (exit status 3)")
		if got := stdout.String(); got != want || cmd.ProcessState.ExitCode() != 1 {
			t.Errorf("want %q, exit 1; got %q, exit %d\nstderr:\n%s", want, got, cmd.ProcessState.ExitCode(), stderr.String())
		}
	} else {
		for _, p := range procs {
			if !alive(p.pid) {
				t.Fatalf("%+v is not running before the kill", p)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
	}
	gone := time.Now()
	var left []spawned
	for {
		left = left[:0]
		for _, p := range procs {
			if alive(p.pid) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Since(gone) > 2*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(left) > 0 {
		var desc []string
		for _, p := range left {
			ppid := -1
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat"); err == nil {
				if i := bytes.LastIndexByte(b, ')'); i > 0 {
					if f := strings.Fields(string(b[i+1:])); len(f) > 1 {
						ppid, _ = strconv.Atoi(f[1])
					}
				}
			}
			desc = append(desc, fmt.Sprintf("%s %d (state %s, parent %d, %q)", p.role, p.pid, procState(p.pid), ppid, cmdline(p.pid)))
		}
		// Tell a slow cleanup from none at all.
		later := "still alive 10 s later"
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if !slices.ContainsFunc(left, func(p spawned) bool { return alive(p.pid) }) {
				later = fmt.Sprintf("gone %s after the agent exited", time.Since(gone).Round(time.Millisecond))
				break
			}
		}
		t.Errorf("alive 2 s after the agent exited (%s): %s\nagent stderr:\n%s", later, strings.Join(desc, "; "), stderr.String())
	} else {
		t.Logf("all %d processes gone %s after the agent exited", len(procs), time.Since(gone).Round(time.Millisecond))
	}
}

// startSleeping starts `exec sleeper sleep seconds=60` (a handler that ignores its
// context) with a long timeout and returns once the command runs in the plugin.
func startSleeping(t *testing.T) (cmd *exec.Cmd, plugin string, exited chan struct{}, stdout *lockedBuffer) {
	t.Helper()
	w := newWorld(t, sleeperBin)
	plugin = filepath.Join(w.pluginDir, sleeperBin)
	started := startMarker(t)
	cmd = exec.Command(binPath(agentBin), "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "--timeout", "600", "exec", "sleeper", "sleep", "seconds=60", "started="+started)
	cmd.Env = baseEnv()
	stdout = &lockedBuffer{}
	cmd.Stdout = stdout
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	waitStarted(t, started)
	return cmd, plugin, exited, stdout
}

// TestSecondSignalExitsAtOnce: one SIGTERM cancels the command and waits the grace
// period for a handler that ignores it; a second SIGTERM ends the agent at once with
// status 130. Either way no plugin process is left. Not parallel with other tests, so
// that "at once" is measured on an idle machine.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	t.Run("two signals", func(t *testing.T) {
		t.Parallel()
		cmd, plugin, exited, _ := startSleeping(t)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		second := time.Now()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Fatal("the agent still runs 15 s after the second signal")
		}
		took := time.Since(second)
		t.Logf("exited %s after the second signal with status %d", took.Round(time.Millisecond), cmd.ProcessState.ExitCode())
		// A graceful stop would wait the handler's 5 s grace; well under that means
		// the second signal cut it short (a loaded machine adds some).
		if took > 4*time.Second || cmd.ProcessState.ExitCode() != 130 {
			t.Errorf("want exit 130 well within the 5 s grace after the second signal; got status %d after %s", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))
		}
		// The plugin sees its agent gone; it gives the hung handler the SDK's 2 s to
		// stop, then exits anyway.
		waitFor(t, 5*time.Second, "the plugin to exit", func() bool { return len(processesOf(plugin)) == 0 })
	})
	t.Run("one signal", func(t *testing.T) {
		t.Parallel()
		cmd, plugin, exited, stdout := startSleeping(t)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		first := time.Now()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			t.Fatal("the agent still runs 20 s after the signal")
		}
		took := time.Since(first)
		t.Logf("exited %s after one signal with status %d", took.Round(time.Millisecond), cmd.ProcessState.ExitCode())
		if took < 4500*time.Millisecond {
			t.Errorf("exited %s after one signal: it did not wait the 5 s grace for the handler", took.Round(time.Millisecond))
		}
		if want := agentError("command cancelled: the agent was interrupted"); stdout.String() != want || cmd.ProcessState.ExitCode() != 1 {
			t.Errorf("want %q, exit 1; got %q, exit %d", want, stdout.String(), cmd.ProcessState.ExitCode())
		}
		if left := processesOf(plugin); len(left) > 0 {
			t.Errorf("plugin processes left: %v", left)
		}
	})
}

// forgedProvenance is what the hostile plugin's forge action returns as provenance.
const forgedProvenance = "hostile:x\nerror|forged\n[result_status] OK / FULL"

// TestHostileRowsAndProvenance: rows with invalid UTF-8 and control bytes, and a
// provenance that tries to add a row and a second trailer, print as exactly three
// lines: U+FFFD for the invalid byte, \xNN for each control byte, the provenance on
// the trailer line. The plugin survives it and answers the next command.
func TestHostileRowsAndProvenance(t *testing.T) {
	t.Parallel()
	t.Run("exec", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, hostileBin)
		w.expect("bad|bad\uFFFD\n"+
			`ctl|a\x1b[31mred\x00z\x7f\x9b.`+"\n"+
			"[result_status] CONSTRAINED / PARTIAL / hostile:x error|forged [result_status] OK / FULL\n", 0, "hostile", "forge")
	})
	t.Run("supervisor", func(t *testing.T) {
		t.Parallel()
		s := newSupervisor(t, supervisor.Options{}, hostileBin)
		pid := runningPid(t, s, "hostile")
		o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "hostile", Command: host.Command{Action: "forge"}, Timeout: 20 * time.Second})
		// The supervisor hands the text on as the plugin sent it (valid UTF-8, as the
		// wire requires); escaping is the printer's job.
		wantRows := []string{"bad|bad\uFFFD", "ctl|a\x1b[31mred\x00z\x7f\u009b."}
		if o.err != nil || !slices.Equal(o.rows, wantRows) || o.res.Code != 0 ||
			o.res.Status != sdk.StatusConstrained || o.res.Completeness != sdk.CompletenessPartial || o.res.Provenance != forgedProvenance {
			t.Fatalf("forge: want rows %q and CONSTRAINED / PARTIAL / %q: %s", wantRows, forgedProvenance, o)
		}
		mustOK(t, s, "hostile", "ok", nil, "ok|hostile")
		if st := statusOf(t, s, "hostile"); st.Pid != pid || st.Restarts != 0 || st.State != supervisor.StateRunning {
			t.Errorf("the plugin did not survive its own hostile answer: %+v (was pid %d)", st, pid)
		}
	})
}

// TestHostileProvenanceNotUTF8: a provenance that is not valid UTF-8 is an answer
// like any other (U+FFFD in place of the bad byte, as for rows), not a broken stream
// that costs the plugin its life.
func TestHostileProvenanceNotUTF8(t *testing.T) {
	t.Parallel()
	w := newWorld(t, hostileBin)
	w.expect("before|badprov\n[result_status] CONSTRAINED / PARTIAL / hostile:\uFFFD\n", 0, "hostile", "badprov")
	s := newSupervisor(t, supervisor.Options{}, hostileBin)
	pid := runningPid(t, s, "hostile")
	o := execute(context.Background(), s.Execute, supervisor.Request{Plugin: "hostile", Command: host.Command{Action: "badprov"}, Timeout: 20 * time.Second})
	if o.err != nil || o.res.Provenance != "hostile:\uFFFD" {
		t.Errorf("badprov: want provenance %q: %s", "hostile:\uFFFD", o)
	}
	if st := statusOf(t, s, "hostile"); st.Pid != pid || st.Restarts != 0 {
		t.Errorf("the plugin was restarted over its provenance: %+v (was pid %d)", st, pid)
	}
}

// TestPluginsAddSwappedSource: 30 `plugins add` runs of a file another user keeps
// replacing with a script of its own (one that leaves a mark when it runs). From a
// directory that user owns, with the file theirs (10) or root's (10), every add is
// refused before a byte is read; from a sticky directory like /tmp (10), the user
// cannot touch root's file and the add installs it. The script runs 0 times: the
// trial start runs the store's copy of the bytes read once, never the path.
func TestPluginsAddSwappedSource(t *testing.T) {
	tr := newUnprivTree(t)
	mark := filepath.Join(tr.base, "evil-ran")
	evil := "#!/bin/sh\necho \"ran as $(id -u)\" >>" + mark + "\nexec sleep 60\n"
	if err := os.WriteFile(tr.source, []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	owned := filepath.Join(tr.base, "theirs")  // a directory the other user owns, like a home
	sticky := filepath.Join(tr.base, "sticky") // root's, world-writable, sticky: a /tmp
	for _, d := range []string{owned, sticky} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(owned, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	tags, err := os.ReadFile(binPath(tagsBin))
	if err != nil {
		t.Fatal(err)
	}
	// offer puts root's tags build at dir's tags path. In the other user's directory
	// that races with the writer, which may remove or replace it at any moment: root's
	// file is there some of the time, which is the point.
	offer := func(dir string, mine bool) string {
		path := filepath.Join(dir, tagsBin)
		if mine {
			_ = os.Remove(path)
			if err := os.WriteFile(path, tags, 0o755); err != nil && dir == sticky {
				t.Fatal(err)
			}
		}
		return path
	}
	type leg struct {
		name      string
		dir       string
		rootsFile bool
		refused   string // what every refusal says; "" when the add must succeed
	}
	legs := []leg{
		{"their file in their dir", owned, false, "the file's directory"},
		{"root's file in their dir", owned, true, "the file's directory"},
		{"root's file in a sticky dir", sticky, true, ""},
	}
	for _, l := range legs {
		path := offer(l.dir, l.rootsFile)
		if !l.rootsFile {
			// Theirs from the start: the writer creates it.
			_ = os.Remove(path)
		}
		wt := *tr
		wt.target = path
		w := startWriter(t, &wt, roleSourceSwapper)
		added := 0
		for i := 0; i < 10; i++ {
			if l.rootsFile && l.dir == owned {
				offer(l.dir, true) // root puts its file back; the writer swaps it again
			}
			world := newWorld(t)
			r := world.pluginsCmd(nil, "add", path)
			switch {
			case l.refused != "" && (r.code != 1 || !strings.Contains(r.stderr, l.refused)):
				t.Errorf("%s, add %d: want a refusal naming %q:\n%s", l.name, i, l.refused, r)
			case l.refused == "" && r.code != 0:
				t.Errorf("%s, add %d: root's file was refused:\n%s", l.name, i, r)
			case l.refused == "":
				cat, err := trust.Load(world.pluginDir)
				if err != nil || cat.Entry("tags") == nil || cat.Entry("tags").SHA256 != built.sums[tagsBin] {
					t.Errorf("%s, add %d: the catalog does not list root's tags build: %v", l.name, i, err)
				}
				added++
			}
		}
		rep := w.stop(t)
		t.Logf("%s: writer as uid %d, %d rounds, attempts %v, succeeded %v", l.name, rep.UID, rep.Rounds, rep.Attempts, rep.Succeeded)
		if l.dir == owned && rep.Succeeded["rename over"]+rep.Succeeded["create"] == 0 {
			t.Errorf("%s: the writer never put its file in place, so nothing was tried: %v", l.name, rep.Samples)
		}
		if l.dir == sticky {
			for _, way := range []string{"rename over", "write in place", "chmod", "unlink", "create"} {
				if rep.Succeeded[way] != 0 {
					t.Errorf("%s: the writer could %s (%d times): the leg tests nothing", l.name, way, rep.Succeeded[way])
				}
			}
			if added != 10 {
				t.Errorf("%s: %d of 10 adds installed root's file", l.name, added)
			}
		}
	}
	if ran, err := os.ReadFile(mark); err == nil {
		t.Errorf("the other user's script ran:\n%s", ran)
	}
}

// TestPluginEnvironHoldsNoKey: the filesystem plugin reading its own initial
// environment (search path=/proc/self/environ, as a fleet operator could ask) finds
// the variable that carried its mutual TLS key and its certificate, but not a byte of
// either: the SDK cleared the value in place at start.
func TestPluginEnvironHoldsNoKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "yuzu-plugin-filesystem")
	for pattern, want := range map[string]string{
		"YUZU_PLUGIN_SERVER_TLS=": "total_matches|1\n", // the name stays: the file was read
		"PRIVATE KEY":             "total_matches|0\n",
		"BEGIN CERTIFICATE":       "total_matches|1\n", // PLUGIN_CLIENT_CERT, the agent's public half
	} {
		r := w.exec("filesystem", "search", "path=/proc/self/environ", "pattern="+pattern)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("search %q in the plugin's environ: want %q:\n%s", pattern, want, r)
		}
	}
}
