package pattern

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// benchSize is the size of the generated search benchmark file.
const benchSize = 100 << 20

// The benchmark patterns, also used by bench/search_vs_grep.sh for the grep side.
const (
	benchLiteral        = "ERROR disk"
	benchRegexLiteral   = `disk sd[a-z][0-9]+ failed`
	benchRegexNoLiteral = `[A-Z]{5}\s[a-z]{4}\s[a-z]{2}[a-z][0-9]`
)

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

// benchFile returns a generated 100 MiB log file: the file named by
// SEARCH_BENCH_FILE (written there when missing, so a script can time other tools on
// the same bytes), else one in a temporary directory removed when the process exits.
func benchFile(b *testing.B) string {
	benchOnce.Do(func() {
		benchPath = os.Getenv("SEARCH_BENCH_FILE")
		if benchPath == "" {
			dir, err := os.MkdirTemp("", "searchbench")
			if err != nil {
				benchErr = err
				return
			}
			benchPath = filepath.Join(dir, "bench.log")
		}
		if st, err := os.Stat(benchPath); err == nil && st.Size() >= benchSize {
			return
		}
		benchErr = writeBenchFile(benchPath)
	})
	if benchErr != nil {
		b.Fatalf("benchmark file: %v", benchErr)
	}
	return benchPath
}

// writeBenchFile writes deterministic log-like lines, about one in a thousand of them
// an ERROR line the benchmark patterns look for.
func writeBenchFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(42, 7))
	written := 0
	for written < benchSize {
		var line string
		ts := fmt.Sprintf("2026-10-04T%02d:%02d:%02d.%03dZ host-%02d app[%d]:",
			rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.IntN(40), 1000+rng.IntN(9000))
		switch r := rng.IntN(1000); {
		case r == 0:
			line = fmt.Sprintf("%s ERROR disk sd%c%d failed: I/O error at sector %d\n",
				ts, 'a'+rune(rng.IntN(4)), 1+rng.IntN(9), rng.IntN(1<<30))
		case r < 30:
			line = fmt.Sprintf("%s WARN slow request id=%08x path=/api/v1/items/%d dur=%dms\n",
				ts, rng.Uint32(), rng.IntN(100000), 500+rng.IntN(5000))
		default:
			line = fmt.Sprintf("%s INFO request id=%08x path=/api/v1/items/%d status=200 dur=%dms\n",
				ts, rng.Uint32(), rng.IntN(100000), rng.IntN(500))
		}
		n, err := w.WriteString(line)
		if err != nil {
			f.Close()
			return err
		}
		written += n
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func benchSearch(b *testing.B, s *Searcher) {
	path := benchFile(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ResetTimer()
	matches := 0
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n, err := s.Search(context.Background(), f, 10000, func(Match) error { return nil })
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		matches = n
	}
	b.ReportMetric(float64(matches), "matches")
}

func BenchmarkSearchLiteral(b *testing.B) {
	benchSearch(b, NewLiteralSearcher(benchLiteral, false))
}

func BenchmarkSearchLiteralFold(b *testing.B) {
	benchSearch(b, NewLiteralSearcher("error disk", true))
}

func BenchmarkSearchRegexLiteral(b *testing.B) {
	re, err := Compile(benchRegexLiteral, false)
	if err != nil {
		b.Fatal(err)
	}
	benchSearch(b, NewRegexSearcher(re))
}

func BenchmarkSearchRegexNoLiteral(b *testing.B) {
	re, err := Compile(benchRegexNoLiteral, false)
	if err != nil {
		b.Fatal(err)
	}
	s := NewRegexSearcher(re)
	if s.find != nil {
		b.Fatalf("pattern %q unexpectedly has a required literal", benchRegexNoLiteral)
	}
	benchSearch(b, s)
}
