// Package limits puts each plugin child in a box with resource limits: on Linux its
// own cgroup (memory, CPU, tasks), on Windows a job object with the same limits. The
// box also holds everything the child starts, so killing the box ends processes that
// left the child's process group and lost their parent. See docs/agent.md,
// "Resource limits".
package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// Limits bound one plugin child and everything it starts. In a box's Limits a zero
// field is a limit this system could not enforce: nothing is claimed for it.
type Limits struct {
	// MemoryBytes is the most memory the box may use; past it the kernel kills it.
	MemoryBytes int64
	// CPUs is how many CPUs' worth of time the box may use (1.5: one and a half).
	CPUs float64
	// Tasks is how many processes and threads the box may hold at once.
	Tasks int64
}

// Default is what a plugin gets unless configured otherwise.
var Default = Limits{MemoryBytes: 512 << 20, CPUs: 1, Tasks: 256}

// Usage is what a box uses and has used.
type Usage struct {
	// Known says the box's counters could be read; the rest is zero otherwise.
	Known bool
	// MemoryBytes is the memory in use now, MemoryPeak the most since the box was
	// made (zero where the kernel keeps no peak).
	MemoryBytes, MemoryPeak int64
	// Tasks is the processes and threads now, TasksPeak the most (zero where the
	// kernel keeps no peak).
	Tasks, TasksPeak int64
	// TasksRefused counts forks refused at the task limit.
	TasksRefused int64
	// CPUSeconds is the CPU time used.
	CPUSeconds float64
	// OOMKills counts processes the kernel killed at the memory limit (on Windows,
	// which refuses rather than kills: the allocations it refused there).
	OOMKills int64
}

// MiB writes a byte count as whole MiB, the unit limits are configured in.
func MiB(n int64) string { return strconv.FormatInt(n>>20, 10) + " MiB" }

// Set is the limits of every plugin: a default and per-plugin overrides.
type Set struct {
	Default Limits
	Plugin  map[string]Limits
}

// For returns the limits of the plugin named name.
func (s Set) For(name string) Limits {
	if l, ok := s.Plugin[name]; ok {
		return l
	}
	return s.Default
}

// Parse reads the --plugin-limits setting: entries separated by ';', each
// "NAME:key=value,key=value" where NAME is a plugin or '*' for every plugin, and the
// keys are memory_mib, cpus and tasks. Keys an entry leaves out keep the value of
// '*', else Default. Empty text is Default for all.
func Parse(text string) (Set, error) {
	set := Set{Default: Default, Plugin: map[string]Limits{}}
	type entry struct {
		name string
		kv   string
	}
	var entries []entry
	for _, e := range strings.Split(text, ";") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, kv, ok := strings.Cut(e, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return Set{}, fmt.Errorf("plugin limits: %q: want NAME:key=value", e)
		}
		if name != "*" && !sdk.ValidName(name) {
			return Set{}, fmt.Errorf("plugin limits: %q is not a plugin name or *", rows.Printable(name))
		}
		entries = append(entries, entry{name, kv})
	}
	// '*' first, whatever its place, so that per-plugin entries start from it.
	for _, star := range []bool{true, false} {
		for _, e := range entries {
			if (e.name == "*") != star {
				continue
			}
			base := set.Default
			if !star {
				if _, dup := set.Plugin[e.name]; dup {
					return Set{}, fmt.Errorf("plugin limits: %s given twice", e.name)
				}
			}
			l, err := parseEntry(base, e.kv)
			if err != nil {
				return Set{}, fmt.Errorf("plugin limits of %s: %w", e.name, err)
			}
			if star {
				set.Default = l
			} else {
				set.Plugin[e.name] = l
			}
		}
	}
	return set, nil
}

// Bounds of what may be configured: enough for a plugin to start, and no more than
// the kernel's files take.
const (
	minMemoryMiB = 32
	maxMemoryMiB = 1 << 30
	minTasks     = 16
	maxTasks     = 1 << 22
	maxCPUs      = 4096
)

func parseEntry(l Limits, kv string) (Limits, error) {
	for _, f := range strings.Split(kv, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return l, fmt.Errorf("%q: want key=value", f)
		}
		switch strings.TrimSpace(k) {
		case "memory_mib":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < minMemoryMiB || n > maxMemoryMiB {
				return l, fmt.Errorf("memory_mib %q: want a whole number from %d to %d", v, minMemoryMiB, maxMemoryMiB)
			}
			l.MemoryBytes = n << 20
		case "cpus":
			c, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(c) || c < 0.01 || c > maxCPUs {
				return l, fmt.Errorf("cpus %q: want a number from 0.01 to %d", v, maxCPUs)
			}
			l.CPUs = c
		case "tasks":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < minTasks || n > maxTasks {
				return l, fmt.Errorf("tasks %q: want a whole number from %d to %d", v, minTasks, maxTasks)
			}
			l.Tasks = n
		default:
			return l, fmt.Errorf("unknown key %q (memory_mib, cpus, tasks)", k)
		}
	}
	return l, nil
}

// String writes l for people: "512 MiB, 1 CPU, 256 tasks".
func (l Limits) String() string {
	cpus := strconv.FormatFloat(l.CPUs, 'f', -1, 64)
	unit := " CPUs"
	if l.CPUs == 1 {
		unit = " CPU"
	}
	return MiB(l.MemoryBytes) + ", " + cpus + unit + ", " + strconv.FormatInt(l.Tasks, 10) + " tasks"
}
