// Command findbyhash runs the find_by_hash engine on one directory with the
// plugin's fixed bounds and prints its rows, the typed status and a timing
// line. The benchmark script uses it; it is also handy for checking a tree
// by hand.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/hashwalk"
	"github.com/yuzugo/yuzu/plugin-filesystem/internal/mounts"
)

func main() {
	root := flag.String("root", "", "directory to search (required)")
	sum := flag.String("sha256", "", "target SHA-256 in hex (required)")
	depth := flag.Int("max-depth", 10, "deepest level walked, 1..10")
	workers := flag.Int("workers", 0, "parallel hashers; 0 means two per CPU")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the walk to this file")
	unbounded := flag.Bool("unbounded", false, "lift the entry, byte and time bounds (scale benchmarks only; the plugin never does)")
	flag.Parse()
	if *root == "" || *sum == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "findbyhash:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "findbyhash:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	bounds := hashwalk.DefaultBounds()
	if *unbounded {
		bounds.MaxVisited = 1 << 40
		bounds.MaxBytes = 1 << 50
		bounds.Deadline = time.Hour
	}
	if err := run(*root, *sum, *depth, *workers, bounds); err != nil {
		fmt.Fprintln(os.Stderr, "findbyhash:", err)
		os.Exit(1)
	}
}

func run(root, sum string, depth, workers int, bounds hashwalk.Bounds) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	canon, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	table, err := mounts.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "findbyhash: running without the network-mount guard:", err)
		table = nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	r, err := hashwalk.Walk(ctx, hashwalk.Request{
		Root:     canon,
		SHA256:   sum,
		MaxDepth: min(max(depth, 1), 10),
		Mounts:   table,
		Bounds:   bounds,
		Workers:  workers,
	})
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	for _, row := range hashwalk.Rows(r) {
		fmt.Println(row.Text())
	}
	st := hashwalk.StatusOf(r)
	if st.Constrained {
		fmt.Printf("[result_status] CONSTRAINED / PARTIAL / %s\n", st.Provenance)
	} else {
		fmt.Println("[result_status] UNDECLARED / UNKNOWN")
	}
	fmt.Fprintf(os.Stderr, "elapsed_seconds=%.4f hashed_bytes=%d visited=%d maxrss_kib=%d cpu_seconds=%.3f\n",
		elapsed.Seconds(), r.Hashed, r.Visited, maxRSSKiB(), cpuSeconds())
	return nil
}
