// Command benchtree writes the benchmark tree for find_by_hash: a fixed
// number of files of incompressible pseudo-random content spread over
// subdirectories, plus one file with known content to find. A tree that is
// already complete with the same parameters is reused.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Needle is the content of the file the benchmark searches for.
const needle = "yuzu find_by_hash benchmark needle\n"

const perDir = 200

func main() {
	dir := flag.String("dir", "", "directory to fill (required)")
	files := flag.Int("files", 20000, "number of files")
	total := flag.Int64("bytes", 2_000_000_000, "approximate total size in bytes")
	flag.Parse()
	if *dir == "" || *files < 1 || *total < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := build(*dir, *files, *total); err != nil {
		fmt.Fprintln(os.Stderr, "benchtree:", err)
		os.Exit(1)
	}
}

func build(dir string, files int, total int64) error {
	marker := filepath.Join(dir, ".complete")
	want := fmt.Sprintf("files=%d bytes=%d\n", files, total)
	if got, err := os.ReadFile(marker); err == nil && string(got) == want {
		fmt.Fprintln(os.Stderr, "benchtree: reusing", dir)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.Remove(marker)
	var seed [32]byte
	copy(seed[:], "yuzu find_by_hash benchmark tree")
	src := rand.NewChaCha8(seed)
	sizes := rand.New(rand.NewPCG(1, 2))
	mean := total / int64(files)
	buf := make([]byte, 1<<20)
	var written int64
	for i := range files {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/perDir))
		if i%perDir == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		// Sizes spread evenly between half and one and a half times the mean.
		size := mean/2 + sizes.Int64N(mean+1)
		if err := writeRandom(filepath.Join(sub, fmt.Sprintf("f%05d", i)), size, src, buf); err != nil {
			return err
		}
		written += size
	}
	if err := os.WriteFile(filepath.Join(dir, "d000", "needle"), []byte(needle), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchtree: wrote %d files, %d bytes\n", files, written)
	return os.WriteFile(marker, []byte(want), 0o644)
}

func writeRandom(p string, size int64, src *rand.ChaCha8, buf []byte) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, len(buf))
	for size > 0 {
		n := min(size, int64(len(buf)))
		src.Read(buf[:n])
		if _, err := w.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		size -= n
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
