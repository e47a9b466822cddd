// Command rssprobe measures the idle memory of the supervisor: it starts one plugin
// through agent/supervisor, runs one command so the child is warm, idles, and prints
// the resident set size of itself and of the plugin child from /proc. The integration
// benchmarks run it (BenchmarkIdleRSS); it stands in for a running agent until the
// agent has a long-running mode of its own.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk/host"
)

func main() {
	pluginDir := flag.String("plugin-dir", "", "plugin dir holding the plugin and plugins.sha256")
	dataDir := flag.String("data-dir", os.TempDir(), "data dir handed to the plugin")
	plugin := flag.String("plugin", "tags", "plugin to start")
	action := flag.String("action", "count", "action to run once before idling")
	idle := flag.Duration("idle", 2*time.Second, "how long to idle before measuring")
	flag.Parse()
	if *pluginDir == "" {
		fmt.Fprintln(os.Stderr, "rssprobe: -plugin-dir is required")
		os.Exit(2)
	}
	if err := probe(*pluginDir, *dataDir, *plugin, *action, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "rssprobe:", err)
		os.Exit(1)
	}
}

func probe(pluginDir, dataDir, plugin, action string, idle time.Duration) error {
	s, err := supervisor.New(supervisor.Options{PluginDir: pluginDir, DataDir: dataDir})
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Execute(ctx, supervisor.Request{Plugin: plugin, Command: host.Command{Action: action}, Timeout: 30 * time.Second}, func([]string) error { return nil })
	if err != nil {
		return err
	}
	if res.Code != 0 {
		return fmt.Errorf("%s %s: rc %d", plugin, action, res.Code)
	}
	time.Sleep(idle)
	var pid int
	for _, st := range s.Status() {
		if st.Name == plugin {
			pid = st.Pid
		}
	}
	if pid == 0 {
		return fmt.Errorf("%s is not running after idling", plugin)
	}
	host, err := rssKiB(os.Getpid())
	if err != nil {
		return err
	}
	child, err := rssKiB(pid)
	if err != nil {
		return err
	}
	fmt.Printf("host_kib=%d child_kib=%d\n", host, child)
	return nil
}

// rssKiB reads VmRSS from /proc/<pid>/status.
func rssKiB(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
