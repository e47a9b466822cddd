//go:build linux

package main

import (
	"bufio"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/sdktest"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// The race tests of this file prove that base_dir and create_temp's directory hold
// against a local user who swaps a directory for a symbolic link in a loop while the
// actions run (docs/filesystem.md, "Paths"). The swapping is done by a copy of this
// test binary started as the unprivileged user nobody, so every swap is one such a
// user can really make, and the directories it works in are really owned by it.

// Environment of the swapping process (see TestMain).
const (
	swapEnvA = "FS_SWAP_A"
	swapEnvB = "FS_SWAP_B"
	nobodyID = 65534
)

// TestMain turns this test binary into the attacker when the race tests start it
// with swapEnvA and swapEnvB set: it exchanges the two names atomically
// (renameat2 RENAME_EXCHANGE) as fast as it can until its standard input closes,
// saying "ready" after the first exchange and the number of exchanges at the end.
// Otherwise it runs the tests through sdktest.Main, so the child tests share one
// build of the plugin (sdktest.Build); elsewhere than Linux they build it each.
func TestMain(m *testing.M) {
	if a, b := os.Getenv(swapEnvA), os.Getenv(swapEnvB); a != "" && b != "" {
		os.Exit(swapLoop(a, b))
	}
	sdktest.Main(m)
}

func swapLoop(a, b string) int {
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	flips := 0
	for {
		select {
		case <-stop:
			fmt.Printf("flips %d\n", flips)
			return 0
		default:
		}
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			fmt.Printf("error %v\n", err)
			return 1
		}
		if flips++; flips == 1 {
			fmt.Println("ready")
		}
	}
}

// swapper is a running attacker process.
type swapper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// needRoot skips a race test where it cannot start a process as nobody, saying why.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to start the attacker as uid %d (running as uid %d)", nobodyID, os.Geteuid())
	}
}

// raceDir returns a fresh directory that nobody may traverse (0755, owned by root),
// holding a copy of this test binary that nobody may run.
func raceDir(t *testing.T) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fscontain-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "attacker.test")
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// startSwapper starts bin as nobody exchanging a and b, and returns once the first
// exchange is done.
func startSwapper(t *testing.T, bin, a, b string) *swapper {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = []string{swapEnvA + "=" + a, swapEnvB + "=" + b}
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID},
		Pdeathsig:  syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start the attacker as uid %d: %v", nobodyID, err)
	}
	s := &swapper{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	if !s.out.Scan() || s.out.Text() != "ready" {
		t.Fatalf("attacker did not start swapping: %q", s.out.Text())
	}
	return s
}

// stop ends the attacker and returns how many exchanges it made. The names are in
// either order afterwards.
func (s *swapper) stop(t *testing.T) int {
	t.Helper()
	s.stdin.Close()
	var last string
	for s.out.Scan() {
		last = s.out.Text()
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("attacker: %v (%s)", err, last)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(last, "flips "))
	if err != nil {
		t.Fatalf("attacker said %q", last)
	}
	return n
}

func raceWrite(t *testing.T, path, content string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func raceMkdir(t *testing.T, path string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// secretSize is the size of every secret file, a size no file of the real tree has,
// so a row carrying it shows that a secret file was looked at.
const secretSize = 1234

// secretTree lays out the directory only root may enter that the attacker's link
// points at. It mirrors the real tree's names (f.txt, sub/g.txt), so a path spelt
// through the swapped name leads to a secret file, and holds secret-only.txt, a name
// the real tree does not have. It returns the secret files' contents.
func secretTree(t *testing.T, dir string) []string {
	t.Helper()
	raceMkdir(t, dir, 0o700, 0)
	var contents []string
	for _, name := range []string{"f.txt", "sub/g.txt", "secret-only.txt"} {
		c := "SECRET " + name + "\n"
		c += strings.Repeat("s", secretSize-len(c)-1) + "\n"
		raceWrite(t, filepath.Join(dir, name), c, 0o600, 0)
		contents = append(contents, c)
	}
	return contents
}

// realTree lays out, owned by nobody, the tree the commands are meant to work on:
// dir/f.txt and dir/sub/g.txt.
func realTree(t *testing.T, dir string) {
	t.Helper()
	raceMkdir(t, dir, 0o755, nobodyID)
	raceWrite(t, dir+"/f.txt", "inside\n", 0o644, nobodyID)
	raceMkdir(t, dir+"/sub", 0o755, nobodyID)
	raceWrite(t, dir+"/sub/g.txt", "inside g\n", 0o644, nobodyID)
}

// raceSecret makes dir/secret with secretTree and returns it, its files' contents
// and a function that lays it out afresh after a command changed it.
func raceSecret(t *testing.T, dir string) (secret string, contents []string, reset func()) {
	t.Helper()
	secret = filepath.Join(dir, "secret")
	contents = secretTree(t, secret)
	return secret, contents, func() {
		os.RemoveAll(secret)
		secretTree(t, secret)
	}
}

// raceLink makes link, owned by nobody, point at target.
func raceLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, nobodyID, nobodyID); err != nil {
		t.Fatal(err)
	}
}

// snapshot describes everything below dir: names, modes and contents.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v", p, fi.Mode())
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", c)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// leakMarks returns what a row may only carry if a secret file or directory was
// read, hashed, listed, described or found to exist.
func leakMarks(contents []string) []string {
	marks := []string{"SECRET", "secret-only", "|" + strconv.Itoa(secretSize), "mode|0600", "not supported"}
	for _, c := range contents {
		s256 := sha256.Sum256([]byte(c))
		s1 := sha1.Sum([]byte(c))
		marks = append(marks, hex.EncodeToString(s256[:]), hex.EncodeToString(s1[:]))
	}
	return marks
}

// baseCommands are the commands run against a base directory spelt base, covering
// every action that takes base_dir: the look, identify and change groups. Paths are
// spelt through base, so while its name is swapped for the link they lead to the
// secret tree. The exists and get_signature commands ask about secret-only.txt: an
// exists|true or a "not supported" answer says it was found.
func baseCommands(base string) []struct {
	action string
	params map[string]string
} {
	type cmd = struct {
		action string
		params map[string]string
	}
	f, g, only := base+"/f.txt", base+"/sub/g.txt", base+"/secret-only.txt"
	with := func(action string, kv ...string) cmd {
		p := map[string]string{"base_dir": base}
		for i := 0; i < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return cmd{action, p}
	}
	return []cmd{
		with("exists", "path", f),
		with("exists", "path", g),
		with("exists", "path", only),
		with("list_dir", "path", base),
		with("list_dir", "path", base+"/sub"),
		with("read", "path", f),
		with("read", "path", g),
		with("file_hash", "path", f),
		with("file_hash", "path", g, "algorithm", "sha1"),
		with("get_acl", "path", f),
		with("get_signature", "path", only),
		with("get_version_info", "path", only),
		with("search", "path", f, "pattern", "SECRET"),
		with("search_dir", "root", base, "pattern", "*", "match_type", "both"),
		with("search_dir", "root", base, "pattern", "*", "match_type", "files"),
		with("replace", "path", f, "search", "SECRET", "replacement", "PWNED"),
		with("replace", "path", g, "search", "s", "replacement", "P", "dry_run", "true"),
		with("write_content", "path", f, "content", "PWNED", "overwrite", "true"),
		with("write_content", "path", base+"/sub/new.txt", "content", "PWNED", "create", "true"),
		with("append", "path", f, "content", "PWNED"),
		with("delete_lines", "path", g, "start_line", "1", "end_line", "1"),
	}
}

// baseRace runs every command of baseCommands(spelt), with base_dir set to
// baseDir, rounds times while the attacker swaps, and returns the escapes per
// action: a command whose rows carry a leak mark, or after which the secret tree
// changed (it is then put back). answers counts the commands that answered rc 0
// and the refusals by their text.
func baseRace(t *testing.T, h *sdktest.Harness, spelt, baseDir, secret string, contents []string, rounds int,
	reset func()) (escapes map[string]int, answers map[string]int) {
	t.Helper()
	marks := leakMarks(contents)
	before := snapshot(t, secret)
	escapes, answers = map[string]int{}, map[string]int{}
	cmds := baseCommands(spelt)
	for range rounds {
		for _, c := range cmds {
			c.params["base_dir"] = baseDir
			o := h.Run(c.action, c.params)
			rows := strings.Join(o.Rows, "\n")
			leaked := slices.ContainsFunc(marks, func(m string) bool { return strings.Contains(rows, m) })
			if c.action == "exists" && strings.HasSuffix(c.params["path"], "/secret-only.txt") &&
				slices.Contains(o.Rows, "exists|true") {
				leaked = true
			}
			if now := snapshot(t, secret); now != before {
				leaked = true
				t.Logf("%s changed the secret tree", c.action)
				reset()
			}
			if leaked {
				escapes[c.action]++
				if escapes[c.action] == 1 {
					t.Logf("ESCAPE %s %v: %q", c.action, c.params, rows)
				}
			}
			key := "rc 0"
			if o.Result.Code != 0 {
				key = o.Rows[len(o.Rows)-1]
			}
			answers[key]++
		}
	}
	return escapes, answers
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestBaseDirSwapRace: base_dir names a directory whose parent belongs to nobody,
// who exchanges it, in a loop, with a link to a directory only root may read. With
// base_dir resolved anew at each look, commands read, hashed, listed and changed
// the secret files whenever the name was the link. Such a base_dir is refused: any
// other user could point it anywhere. Escapes must be 0.
func TestBaseDirSwapRace(t *testing.T) {
	needRoot(t)
	dir, bin := raceDir(t)
	u := filepath.Join(dir, "u")
	raceMkdir(t, u, 0o755, nobodyID)
	base := filepath.Join(u, "base")
	realTree(t, base)
	secret, contents, reset := raceSecret(t, dir)
	link := filepath.Join(u, "link")
	raceLink(t, secret, link)

	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: t.TempDir()})
	s := startSwapper(t, bin, base, link)
	escapes, answers := baseRace(t, h, base, base, secret, contents, 10, reset)
	flips := s.stop(t)
	t.Logf("base_dir swap race: %d exchanges, %d commands, %d escapes %v; answers %v",
		flips, 10*len(baseCommands(base)), total(escapes), escapes, answers)
	if total(escapes) != 0 {
		t.Errorf("%d escapes: %v", total(escapes), escapes)
	}
	// Every command is refused, and says why.
	want := "error|base directory refused: " + u + " is owned by uid 65534, not by root or by the agent's user (uid 0)"
	for k, n := range answers {
		if k != want {
			t.Errorf("%d answers %q, want every one to be %q", n, k, want)
		}
	}
}

// TestInnerSwapRace: base_dir itself is trusted (root's, writable by nobody else),
// but a directory inside it belongs to nobody, who exchanges a subdirectory of it,
// in a loop, with a link to a directory only root may read. Every look at what is
// below that subdirectory must stay inside base_dir: the commands may succeed on the
// real files or be refused, and must never describe a secret one. Escapes must be 0.
func TestInnerSwapRace(t *testing.T) {
	needRoot(t)
	for _, walk := range []bool{false, true} {
		name := map[bool]string{false: "openat2", true: "walk"}[walk]
		t.Run(name, func(t *testing.T) {
			if !walk && !pathcheck.Openat2Available() {
				t.Skip("openat2 is not available here; the walk subtest covers this kernel")
			}
			pathcheck.ForceFallback(walk)
			defer pathcheck.ForceFallback(false)
			innerSwapRace(t)
		})
	}
}

func innerSwapRace(t *testing.T) {
	dir, bin := raceDir(t)
	base := filepath.Join(dir, "base")
	raceMkdir(t, base, 0o755, 0)
	u := filepath.Join(base, "u")
	raceMkdir(t, u, 0o755, nobodyID)
	inner := filepath.Join(u, "inner")
	realTree(t, inner)
	secret, contents, reset := raceSecret(t, dir)
	link := filepath.Join(u, "link")
	raceLink(t, secret, link)

	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: t.TempDir()})
	s := startSwapper(t, bin, inner, link)
	// The commands of baseCommands, spelt below the swapped subdirectory, with the
	// trusted base_dir.
	// Twice the rounds of the base_dir race: the old code escaped here in only about
	// one command in fifty.
	const rounds = 20
	escapes, answers := baseRace(t, h, inner, base, secret, contents, rounds, reset)
	flips := s.stop(t)
	t.Logf("inner swap race: %d exchanges, %d commands, %d escapes %v; answers %v",
		flips, rounds*len(baseCommands(inner)), total(escapes), escapes, answers)
	if total(escapes) != 0 {
		t.Errorf("%d escapes: %v", total(escapes), escapes)
	}
	// The race must have been run: some commands answered on the real files.
	if answers["rc 0"] == 0 {
		t.Errorf("no command succeeded on the real tree; the race proves nothing: %v", answers)
	}
}

// TestCreateTempSwapRace: create_temp and create_temp_dir are given a directory
// whose parent belongs to nobody, who exchanges it, in a loop, with a link to a
// directory only root may read. Nothing may be created in that directory: each run
// creates its entry in the real directory (wherever nobody has moved it by then) or
// is refused. Escapes must be 0 in 100 runs.
func TestCreateTempSwapRace(t *testing.T) {
	needRoot(t)
	dir, bin := raceDir(t)
	u := filepath.Join(dir, "u")
	raceMkdir(t, u, 0o755, nobodyID)
	d := filepath.Join(u, "d")
	raceMkdir(t, d, 0o755, nobodyID)
	realDir, err := os.Stat(d)
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	raceMkdir(t, secret, 0o700, 0)
	link := filepath.Join(u, "link")
	raceLink(t, secret, link)

	h := sdktest.New(t, newPlugin(), sdk.Config{DataDir: t.TempDir()})
	s := startSwapper(t, bin, d, link)
	const runs = 100
	created, refused := 0, map[string]int{}
	var names []string
	for i := range runs {
		action := []string{"create_temp", "create_temp_dir"}[i%2]
		o := h.Run(action, map[string]string{"directory": d, "prefix": "race-"})
		if o.Result.Code != 0 {
			refused[o.Rows[len(o.Rows)-1]]++
			continue
		}
		created++
		for _, r := range o.Rows {
			if p, ok := strings.CutPrefix(r, "path|"); ok {
				names = append(names, filepath.Base(p))
			}
		}
	}
	flips := s.stop(t)

	escaped, ents := 0, []string{}
	if es, err := os.ReadDir(secret); err == nil {
		for _, e := range es {
			ents = append(ents, e.Name())
		}
		escaped = len(es)
	}
	// The real directory is wherever the exchanges left it; every created entry
	// must be there.
	var inReal []string
	for _, p := range []string{d, link} {
		if fi, err := os.Lstat(p); err == nil && os.SameFile(fi, realDir) {
			es, err := os.ReadDir(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				inReal = append(inReal, e.Name())
			}
		}
	}
	t.Logf("create_temp swap race: %d exchanges, %d runs, %d created, %d escapes (in the secret directory: %v); refused %v",
		flips, runs, created, escaped, ents, refused)
	if escaped != 0 {
		t.Errorf("%d entries created in the secret directory: %v", escaped, ents)
	}
	if created == 0 {
		t.Errorf("nothing was created in %d runs; the race proves nothing: %v", runs, refused)
	}
	slices.Sort(names)
	slices.Sort(inReal)
	if !slices.Equal(names, inReal) {
		t.Errorf("created %v, the real directory holds %v", names, inReal)
	}
	for k := range refused {
		if !strings.HasPrefix(k, "error|directory refused: ") && k != "error|directory does not exist or is not accessible" {
			t.Errorf("refused with %q", k)
		}
	}
}
