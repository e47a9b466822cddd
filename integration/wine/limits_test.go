//go:build linux

package wine

import (
	"regexp"
	"strings"
	"testing"
)

// The plugins' boxes (job objects, docs/agent.md "Resource limits") driven through
// yuzu-agent.exe with the hog test plugin, as integration/limits_test.go does on
// Linux. Where Wine 8.0 does not enforce a limit the test says so by name and what
// was seen instead; agent/internal/limits' Windows tests probe the same limits on
// the job objects themselves.

// TestWindowsBoxMemoryLimit: a plugin that allocates past its memory limit costs its
// command, answered as on Linux with "plugin exceeded its memory limit (256 MiB)";
// the same allocation within the default limit succeeds.
func TestWindowsBoxMemoryLimit(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, hogExe)
	r := w.exec("--plugin-limits", "hog:memory_mib=256", "hog", "alloc", "mib=400")
	switch {
	case r.stdout == "error|plugin exceeded its memory limit (256 MiB)\n"+undeclared+rc1 && r.code == 1:
	case strings.HasPrefix(r.stdout, "allocated|400\n") && r.code == 0:
		t.Skip("Wine does not enforce a job's memory limit (JOB_OBJECT_LIMIT_JOB_MEMORY, " +
			"JOB_OBJECT_LIMIT_PROCESS_MEMORY): hog allocated 400 MiB in a 256 MiB box; only real Windows shows the refusal")
	default:
		t.Fatalf("400 MiB in a 256 MiB box: want the memory-limit error:\n%s", r)
	}
	w.expect("allocated|400\n"+undeclared, 0, "hog", "alloc", "mib=400")
}

// TestWindowsBoxProcessLimit: a plugin that starts processes past its box's
// ActiveProcessLimit (tasks) is refused the start that would pass it: with 16, the
// plugin and 15 of its children.
func TestWindowsBoxProcessLimit(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, hogExe)
	r := w.exec("--plugin-limits", "hog:tasks=16", "hog", "spawn", "n=20", "seconds=60")
	switch {
	case r.code == 0 && strings.HasPrefix(r.stdout, "spawned|15\nrefused|"):
	case r.code == 0 && strings.HasPrefix(r.stdout, "spawned|20\n"):
		t.Skip("Wine does not enforce a job's ActiveProcessLimit: hog started 20 processes in a box of 16 " +
			"(the plugin is one); only real Windows shows the refusal")
	default:
		t.Fatalf("20 starts in a box of 16 processes: want 15 started and the 16th refused:\n%s", r)
	}
}

// TestWindowsPluginLimitsShown: `plugins` shows the limits configured, by
// --plugin-limits and by YUZU_PLUGIN_LIMITS, per plugin over '*'. The CPU column shows
// the configured share where jobs take a CPU rate cap and "none" where they do not
// (Wine), never a limit that is not there.
func TestWindowsPluginLimitsShown(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, tagsExe, hogExe)
	check := func(how string, r run) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("plugins (%s): exit %d:\n%s", how, r.code, r)
		}
		noCPU := strings.Contains(r.stderr, "take no CPU rate cap")
		cpu := func(c string) string {
			if noCPU {
				return "none"
			}
			return regexp.QuoteMeta(c)
		}
		for _, want := range []string{
			`(?m)^hog +\S+ +1 +unsigned +running +0 +- +(?:[0-9]+ MiB|-)/128 MiB +(?:[0-9]+|-)/100 +` + cpu("1") + ` +\S+$`,
			`(?m)^tags +\S+ +1 +unsigned +running +0 +- +(?:[0-9]+ MiB|-)/200 MiB +(?:[0-9]+|-)/100 +` + cpu("0.5") + ` +\S+$`,
		} {
			if !regexp.MustCompile(want).MatchString(r.stdout) {
				t.Errorf("plugins (%s): no row matches %s:\n%s", how, want, r)
			}
		}
	}
	const set = "*:memory_mib=128,tasks=100;tags:memory_mib=200,cpus=0.5"
	check("--plugin-limits", w.agent("--plugin-limits", set, "plugins"))
	check("YUZU_PLUGIN_LIMITS", runExe(t, []string{"YUZU_PLUGIN_LIMITS=" + set}, env.bin+"/"+agentExe,
		"--plugin-dir", winPath(w.pluginDir), "--data-dir", winPath(w.dataDir), "plugins"))
}
