package pattern

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// benchSize is the size of the generated search benchmark file.
const benchSize = 100 << 20

// The benchmark patterns, also used by bench/search_vs_grep.sh for the grep side.
const (
	benchLiteral        = "ERROR disk"
	benchLiteralFold    = "error disk"
	benchRegexLiteral   = `disk sd[a-z][0-9]+ failed`
	benchRegexNoLiteral = `[A-Z]{5}\s[a-z]{4}\s[a-z]{2}[a-z][0-9]`
	benchNameRegex      = `[a-z]+_[0-9]{2,4}[a-z]*\.[a-z]{3}`
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
	benchSearch(b, NewLiteralSearcher(benchLiteralFold, true))
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

// BenchmarkSearchRegexNoLiteralGo is the same search with Go's regexp alone, the
// engine the DFA replaces, for comparison.
func BenchmarkSearchRegexNoLiteralGo(b *testing.B) {
	re, err := Compile(benchRegexNoLiteral, false)
	if err != nil {
		b.Fatal(err)
	}
	s := NewRegexSearcher(re)
	s.prog = nil
	benchSearch(b, s)
}

// BenchmarkReplaceRegexNoLiteral is a whole-file regex replace (read, then every match
// replaced) on the same file, with a pattern that has no required literal.
func BenchmarkReplaceRegexNoLiteral(b *testing.B) {
	re, err := Compile(benchRegexNoLiteral, false)
	if err != nil {
		b.Fatal(err)
	}
	path := benchFile(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ResetTimer()
	count := 0
	for b.Loop() {
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		// The cap is the file's size: the bench file is a few bytes over the
		// action's 100 MiB limit, and the replacement only shortens it.
		if _, count, err = ReplaceAll(re, src, "<$1>", len(src)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(count), "matches")
}

var (
	namesOnce sync.Once
	namesPath string
	namesErr  error
)

// namesFile returns a generated list of file names, one per line: the file named by
// SEARCH_NAMES_FILE (written there when missing) or a temporary one.
func namesFile(b *testing.B) string {
	namesOnce.Do(func() {
		namesPath = os.Getenv("SEARCH_NAMES_FILE")
		if namesPath == "" {
			dir, err := os.MkdirTemp("", "namesbench")
			if err != nil {
				namesErr = err
				return
			}
			namesPath = filepath.Join(dir, "names.txt")
		}
		if _, err := os.Stat(namesPath); err == nil {
			return
		}
		namesErr = writeNamesFile(namesPath)
	})
	if namesErr != nil {
		b.Fatalf("names file: %v", namesErr)
	}
	return namesPath
}

// writeNamesFile writes two million deterministic names of the kinds a directory
// walk meets: words, numbered files, dotted extensions.
func writeNamesFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(9, 10))
	words := []string{"report", "img", "cache", "node", "lib", "backup", "log", "config", "data", "tmp"}
	exts := []string{"txt", "log", "jpg", "so", "conf", "json", "gz", "d"}
	for n := 0; n < 2_000_000; n++ {
		word := words[rng.IntN(len(words))]
		var name string
		switch rng.IntN(4) {
		case 0:
			name = word
		case 1:
			name = fmt.Sprintf("%s_%d.%s", word, rng.IntN(100000), exts[rng.IntN(len(exts))])
		case 2:
			name = fmt.Sprintf("%s-%s.%s", word, words[rng.IntN(len(words))], exts[rng.IntN(len(exts))])
		default:
			name = fmt.Sprintf("%s%d", word, rng.IntN(10))
		}
		if _, err := fmt.Fprintln(w, name); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// BenchmarkMatchNames matches a regex against every name of the list as search_dir
// does (the whole name, CompileName), with the DFA Matcher and with Go's regexp.
func BenchmarkMatchNames(b *testing.B) {
	re, err := CompileName(benchNameRegex)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(namesFile(b))
	if err != nil {
		b.Fatal(err)
	}
	names := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for _, c := range []struct {
		name  string
		match func(string) bool
	}{
		{"dfa", NewMatcher(re).MatchString},
		{"regexp", re.MatchString},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			n := 0
			for b.Loop() {
				n = 0
				for _, name := range names {
					if c.match(name) {
						n++
					}
				}
			}
			b.ReportMetric(float64(n), "matches")
		})
	}
}
