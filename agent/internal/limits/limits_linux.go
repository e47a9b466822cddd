package limits

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk/proctree"
)

// The Linux box is a cgroup. Where the unified (v2) hierarchy is mounted, each child
// has a cgroup there: the child is forked straight into it (CLONE_INTO_CGROUP), so
// everything it ever starts is inside, and cgroup.kill ends them all. Each of the
// memory, cpu and pids controllers is taken from v2 when the agent's cgroup can
// enable it there, else from its v1 hierarchy where one is mounted (a "hybrid" host),
// in which case the child joins that cgroup right after it starts. See
// docs/agent.md, "Resource limits".

// controllers are those the box limits, with their v1 names.
var controllers = []string{"memory", "cpu", "pids"}

// Host makes boxes: one per agent process.
type Host struct {
	v2     string            // this agent's v2 directory for boxes, "" if none
	in2    map[string]bool   // controllers enabled for boxes in v2
	v1     map[string]string // controller -> this agent's v1 directory for boxes
	bases  []string          // the directories above, removed by Close
	reason string            // why limits are not (all) applied, for one log line

	n   int64 // which Host of this process (baseName)
	mu  sync.Mutex
	seq int
}

// New finds the cgroups available to the agent and prepares a directory for its
// boxes. It never fails: what is missing is said by Unavailable, and boxes then
// apply what they can.
func New() *Host {
	h := &Host{in2: map[string]bool{}, v1: map[string]string{}, n: hosts.Add(1)}
	mounts, err := readMounts()
	if err != nil {
		h.reason = "cannot read the mount table: " + err.Error()
		return h
	}
	own, err := ownCgroups()
	if err != nil {
		h.reason = "cannot read /proc/self/cgroup: " + err.Error()
		return h
	}
	var missing []string
	if m, ok := mounts["cgroup2"]; ok {
		if p, ok := own[""]; ok {
			if err := h.setupV2(m, p); err != nil {
				missing = append(missing, "cgroup v2: "+err.Error())
			}
		}
	} else {
		missing = append(missing, "no cgroup v2 hierarchy is mounted, so leftovers of a dead agent's plugins cannot be ended")
	}
	for _, c := range controllers {
		if h.in2[c] {
			continue
		}
		m, ok := mounts[c]
		p, ok2 := own[c]
		if !ok || !ok2 {
			missing = append(missing, "no "+c+" controller in cgroup v2 or v1")
			continue
		}
		dir := filepath.Join(m.dir, relative(m.root, p), baseName(h.n))
		sweepStale(filepath.Dir(dir))
		if err := mkdirBase(dir); err != nil {
			missing = append(missing, "cgroup v1 "+c+": "+err.Error())
			continue
		}
		clearBase(dir)
		h.v1[c] = dir
		h.bases = append(h.bases, dir)
	}
	h.reason = strings.Join(missing, "; ")
	return h
}

// Unavailable says which limits cannot be applied and why, or "".
func (h *Host) Unavailable() string { return h.reason }

// Where says where the boxes are, for the log.
func (h *Host) Where() string {
	var parts []string
	if h.v2 != "" {
		var in []string
		for _, c := range controllers {
			if h.in2[c] {
				in = append(in, c)
			}
		}
		parts = append(parts, "v2 "+h.v2+" ("+strings.Join(in, ",")+")")
	}
	for _, c := range controllers {
		if d, ok := h.v1[c]; ok {
			parts = append(parts, "v1 "+c+" "+d)
		}
	}
	return strings.Join(parts, "; ")
}

// hosts counts the Hosts of this process: tests run several supervisors in one.
var hosts atomic.Int64

// baseName names a Host's directory of boxes, yuzu-agent-<pid>-<n>: the pid tells
// agents apart, n the Hosts of one process, and a directory whose agent is gone is
// swept by the next (sweepStale).
func baseName(n int64) string {
	return "yuzu-agent-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(n, 10)
}

// setupV2 makes the agent's v2 directory for boxes and enables the controllers it can.
// In the root cgroup (a host or a container without a cgroup of its own) that is a
// new child of the root. Otherwise the agent's own cgroup must be its alone (as
// systemd's Delegate=yes gives a service): the agent moves itself into a leaf of it,
// since a cgroup with processes cannot enable controllers for its children.
func (h *Host) setupV2(m mount, p string) error {
	dir := filepath.Join(m.dir, relative(m.root, p))
	var base string
	if relative(m.root, p) == "/" {
		base = filepath.Join(dir, baseName(h.n))
	} else {
		procs, err := readInts(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return err
		}
		if len(procs) != 1 || procs[0] != os.Getpid() {
			return fmt.Errorf("the agent shares its cgroup %s with %d other processes; give it a cgroup of its own (systemd: Delegate=yes)", dir, len(procs)-1)
		}
		leaf := filepath.Join(dir, "yuzu-agent")
		if err := mkdirBase(leaf); err != nil {
			return err
		}
		if err := write(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
			return fmt.Errorf("moving the agent into %s: %w", leaf, err)
		}
		base = filepath.Join(dir, "plugins-"+strconv.FormatInt(h.n, 10))
	}
	sweepStale(filepath.Dir(base))
	if err := mkdirBase(base); err != nil {
		return err
	}
	clearBase(base)
	h.v2 = base
	h.bases = append(h.bases, base)
	// Enable down the two levels: the agent's cgroup for base, base for the boxes.
	for _, d := range []string{dir, base} {
		avail, _ := os.ReadFile(filepath.Join(d, "cgroup.controllers"))
		var want []string
		for _, c := range controllers {
			if hasWord(avail, c) {
				want = append(want, "+"+c)
			}
		}
		for _, w := range want {
			_ = write(filepath.Join(d, "cgroup.subtree_control"), w)
		}
	}
	enabled, _ := os.ReadFile(filepath.Join(base, "cgroup.subtree_control"))
	for _, c := range controllers {
		h.in2[c] = hasWord(enabled, c)
	}
	return nil
}

func hasWord(b []byte, w string) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == w {
			return true
		}
	}
	return false
}

// sweepStale ends the boxes of agents that died without removing them (killed), and
// removes their directories: a double-forked leftover of a killed agent's plugin ends
// here at the latest.
func sweepStale(parent string) {
	des, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, de := range des {
		rest, ok := strings.CutPrefix(de.Name(), "yuzu-agent-")
		pid, _, _ := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || !de.IsDir() || n == os.Getpid() {
			continue
		}
		if unix.Kill(n, 0) == nil {
			continue // that agent is alive
		}
		removeTree(filepath.Join(parent, de.Name()))
	}
}

// clearBase empties a directory of boxes that was there already: a box left by an
// agent that was killed (its pid reused by this one, or the delegated cgroup's fixed
// directory) would hold a name the boxes here are about to take.
func clearBase(base string) {
	des, _ := os.ReadDir(base)
	for _, de := range des {
		if de.IsDir() {
			removeTree(filepath.Join(base, de.Name()))
		}
	}
}

// removeTree kills everything in a cgroup directory tree and removes it, deepest first.
func removeTree(dir string) {
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if de.IsDir() {
			removeTree(filepath.Join(dir, de.Name()))
		}
	}
	killDir(dir)
	waitEmpty(dir)
	_ = os.Remove(dir)
}

// Close removes the agent's directories of boxes (each box removes its own first).
func (h *Host) Close() {
	for _, b := range h.bases {
		removeTree(b)
	}
}

// Box is one child's cgroup (or cgroups, on a hybrid host).
type Box struct {
	limits Limits
	v2     string            // the child's v2 cgroup, "" if none
	v1     map[string]string // controller -> the child's v1 cgroup
	fd     int               // v2 directory, open until the child has started
	mu     sync.Mutex
	last   Usage // read just before the box was removed
	closed bool
}

// Box makes a box with limits l for a child of plugin name. With no cgroup at all it
// returns nil, which every method of Box accepts (no limits, today's behaviour).
func (h *Host) Box(name string, l Limits) (*Box, error) {
	if h.v2 == "" && len(h.v1) == 0 {
		return nil, nil
	}
	h.mu.Lock()
	h.seq++
	leaf := fmt.Sprintf("%s-%d", name, h.seq)
	h.mu.Unlock()
	b := &Box{limits: h.enforced(l), v1: map[string]string{}, fd: -1}
	fail := func(err error) (*Box, error) {
		b.remove()
		return nil, err
	}
	if h.v2 != "" {
		b.v2 = filepath.Join(h.v2, leaf)
		if err := os.Mkdir(b.v2, 0o755); err != nil {
			b.v2 = ""
			return fail(err)
		}
		if err := b.limit2(h.in2); err != nil {
			return fail(err)
		}
		fd, err := unix.Open(b.v2, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail(err)
		}
		b.fd = fd
	}
	for c, base := range h.v1 {
		d := filepath.Join(base, leaf)
		if err := os.Mkdir(d, 0o755); err != nil {
			return fail(err)
		}
		b.v1[c] = d
		if err := b.limit1(c, d); err != nil {
			return fail(err)
		}
	}
	return b, nil
}

// enforced is l with zero for each limit no controller here can hold, so that what
// the box reports (plugins, metrics) is what is enforced; Unavailable names the
// missing controllers.
func (h *Host) enforced(l Limits) Limits {
	has := func(c string) bool { _, v1 := h.v1[c]; return h.in2[c] || v1 }
	if !has("memory") {
		l.MemoryBytes = 0
	}
	if !has("cpu") {
		l.CPUs = 0
	}
	if !has("pids") {
		l.Tasks = 0
	}
	return l
}

// cpuPeriod is the period of cpu.max, in microseconds (the kernel's default).
const cpuPeriod = 100000

func (b *Box) limit2(in map[string]bool) error {
	l := b.limits
	var errs []error
	set := func(file, v string) { errs = append(errs, write(filepath.Join(b.v2, file), v)) }
	if in["memory"] {
		set("memory.max", strconv.FormatInt(l.MemoryBytes, 10))
		// Swap would let the box run far past its limit, slowly; the whole box
		// goes at an out-of-memory kill, as the plugin cannot work without a part.
		if _, err := os.Stat(filepath.Join(b.v2, "memory.swap.max")); err == nil {
			set("memory.swap.max", "0")
		}
		set("memory.oom.group", "1")
	}
	if in["cpu"] {
		set("cpu.max", strconv.FormatInt(int64(l.CPUs*cpuPeriod), 10)+" "+strconv.Itoa(cpuPeriod))
	}
	if in["pids"] {
		set("pids.max", strconv.FormatInt(l.Tasks, 10))
	}
	return errors.Join(errs...)
}

func (b *Box) limit1(c, d string) error {
	l := b.limits
	switch c {
	case "memory":
		if err := write(filepath.Join(d, "memory.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		// Memory and swap together, where the kernel accounts swap.
		if _, err := os.Stat(filepath.Join(d, "memory.memsw.limit_in_bytes")); err == nil {
			return write(filepath.Join(d, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.MemoryBytes, 10))
		}
	case "cpu":
		if err := write(filepath.Join(d, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod)); err != nil {
			return err
		}
		return write(filepath.Join(d, "cpu.cfs_quota_us"), strconv.FormatInt(int64(l.CPUs*cpuPeriod), 10))
	case "pids":
		return write(filepath.Join(d, "pids.max"), strconv.FormatInt(l.Tasks, 10))
	}
	return nil
}

// Limits returns the box's limits.
func (b *Box) Limits() Limits { return b.limits }

// Prepare makes cmd start inside the box, and tells it its cgroup.
func (b *Box) Prepare(cmd *exec.Cmd) {
	if b == nil || b.fd < 0 {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = b.fd
	// The SDK ends the box when the agent dies (proctree.EndOwnCgroup).
	cmd.Env = append(cmd.Env, proctree.EnvCgroup+"="+b.v2)
}

// Started finishes the start of the child p: it joins the v1 cgroups (where v2 does
// not hold a controller; the child runs outside them for the moment between its fork
// and this), and the v2 directory is closed.
func (b *Box) Started(pid int) error {
	if b == nil {
		return nil
	}
	if b.fd >= 0 {
		_ = unix.Close(b.fd)
		b.fd = -1
	}
	var errs []error
	for c, d := range b.v1 {
		if err := write(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			errs = append(errs, fmt.Errorf("joining the %s cgroup: %w", c, err))
		}
	}
	return errors.Join(errs...)
}

// StartFailed undoes Prepare after a failed start.
func (b *Box) StartFailed() {
	if b == nil {
		return
	}
	if b.fd >= 0 {
		_ = unix.Close(b.fd)
		b.fd = -1
	}
	b.Close()
}

// Kill ends every process in the box.
func (b *Box) Kill() {
	if b == nil {
		return
	}
	for _, d := range b.dirs() {
		killDir(d)
	}
}

func (b *Box) dirs() []string {
	var out []string
	if b.v2 != "" {
		out = append(out, b.v2)
	}
	for _, c := range controllers {
		if d, ok := b.v1[c]; ok {
			out = append(out, d)
		}
	}
	return out
}

// killDir ends every process in one cgroup: cgroup.kill where the kernel has it
// (v2, Linux 5.14), else SIGKILL to each process listed until none is left (the
// bound only guards against a kernel that keeps listing one).
func killDir(d string) {
	if write(filepath.Join(d, "cgroup.kill"), "1") == nil {
		return
	}
	for range 1000 {
		pids, err := readInts(filepath.Join(d, "cgroup.procs"))
		if err != nil || len(pids) == 0 {
			return
		}
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
	}
}

// emptyWait bounds how long a box's removal waits for its killed processes to go.
const emptyWait = 5 * time.Second

// waitEmpty waits until a cgroup holds no process: the kernel ends killed processes
// asynchronously, and a cgroup with processes cannot be removed.
func waitEmpty(d string) {
	for deadline := time.Now().Add(emptyWait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		pids, err := readInts(filepath.Join(d, "cgroup.procs"))
		if err != nil || len(pids) == 0 {
			return
		}
	}
}

// Close ends what is left in the box once its child has exited, keeps its last
// counters (Usage) and removes it.
func (b *Box) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.last = b.read()
	b.closed = true
	b.mu.Unlock()
	// Readers get the last counters meanwhile.
	b.remove()
}

func (b *Box) remove() {
	for _, d := range b.dirs() {
		killDir(d)
		waitEmpty(d)
		_ = os.Remove(d)
	}
}

// Usage returns the box's counters, the last ones once the box is removed.
func (b *Box) Usage() Usage {
	if b == nil {
		return Usage{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.last
	}
	return b.read()
}

// read reads the counters; b.mu is held.
func (b *Box) read() Usage {
	var u Usage
	ok := false
	num := func(dir, file string) int64 {
		v, err := readInt(filepath.Join(dir, file))
		if err == nil {
			ok = true
		}
		return v
	}
	key := func(dir, file, k string) int64 {
		v, err := readKey(filepath.Join(dir, file), k)
		if err == nil {
			ok = true
		}
		return v
	}
	if d := b.v2; d != "" {
		if _, v1 := b.v1["memory"]; !v1 {
			u.MemoryBytes = num(d, "memory.current")
			u.MemoryPeak = num(d, "memory.peak")
			u.OOMKills = key(d, "memory.events", "oom_kill")
		}
		if _, v1 := b.v1["pids"]; !v1 {
			u.Tasks = num(d, "pids.current")
			u.TasksPeak = num(d, "pids.peak")
			u.TasksRefused = key(d, "pids.events", "max")
		}
		if _, v1 := b.v1["cpu"]; !v1 {
			u.CPUSeconds = float64(key(d, "cpu.stat", "usage_usec")) / 1e6
		}
	}
	if d, has := b.v1["memory"]; has {
		u.MemoryBytes = num(d, "memory.usage_in_bytes")
		u.MemoryPeak = num(d, "memory.max_usage_in_bytes")
		u.OOMKills = key(d, "memory.oom_control", "oom_kill")
	}
	if d, has := b.v1["pids"]; has {
		u.Tasks = num(d, "pids.current")
		u.TasksRefused = key(d, "pids.events", "max")
	}
	if d, has := b.v1["cpu"]; has {
		if ns, err := readInt(filepath.Join(d, "cpuacct.usage")); err == nil {
			u.CPUSeconds = float64(ns) / 1e9
		}
	}
	u.Known = ok
	return u
}

// OOMKilled says the kernel killed a process of the box at its memory limit.
func (b *Box) OOMKilled() bool { return b != nil && b.Usage().OOMKills > 0 }

// mount is where one hierarchy is mounted: its directory and the cgroup path of that
// directory (not "/" inside a container that bind-mounts its own part).
type mount struct{ dir, root string }

// readMounts returns the cgroup mounts by controller ("cgroup2" for the unified one).
func readMounts() (map[string]mount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	out := map[string]mount{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || len(f) < sep+4 {
			continue
		}
		m := mount{dir: unescapeMount(f[4]), root: unescapeMount(f[3])}
		switch f[sep+1] {
		case "cgroup2":
			if _, ok := out["cgroup2"]; !ok {
				out["cgroup2"] = m
			}
		case "cgroup":
			for _, o := range strings.Split(f[sep+3], ",") {
				if _, ok := out[o]; !ok {
					out[o] = m
				}
			}
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups returns this process's cgroup path by controller, "" for v2.
func ownCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// relative is cgroup path p as seen below a mount of root.
func relative(root, p string) string {
	if root == "/" {
		return p
	}
	if rest, ok := strings.CutPrefix(p, root); ok && (rest == "" || rest[0] == '/') {
		if rest == "" {
			return "/"
		}
		return rest
	}
	return p
}

func mkdirBase(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// write writes one value to a cgroup file, as the kernel wants it: one write.
func write(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// maxFile bounds the read of one cgroup file; cgroup.procs of a full box is the largest.
const maxFile = 1 << 20

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFile))
}

func readInt(path string) (int64, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func readInts(path string) ([]int, error) {
	b, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// readKey reads the value of key in a flat keyed file ("key value" lines).
func readKey(path, key string) (int64, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}
