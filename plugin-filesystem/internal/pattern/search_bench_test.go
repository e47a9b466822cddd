package pattern

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
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

// benchTemp lists the temporary directories the benchmarks made; TestMain removes them
// when the test binary is done.
var benchTemp []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range benchTemp {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// genFile is a generated benchmark input, made once per process: the file named by
// the environment variable env (written there when missing or too small, so a script
// can time other tools on the same bytes), else name in a temporary directory
// removed when the test binary is done.
type genFile struct {
	env, name string
	minSize   int64
	write     func(path string) error

	once sync.Once
	path string
	err  error
}

func (g *genFile) get(b *testing.B) string {
	g.once.Do(func() {
		g.path = os.Getenv(g.env)
		if g.path == "" {
			dir, err := os.MkdirTemp("", "patternbench")
			if err != nil {
				g.err = err
				return
			}
			benchTemp = append(benchTemp, dir)
			g.path = filepath.Join(dir, g.name)
		}
		if st, err := os.Stat(g.path); err == nil && st.Size() >= g.minSize {
			return
		}
		g.err = g.write(g.path)
	})
	if g.err != nil {
		b.Fatalf("benchmark input %s: %v", g.name, g.err)
	}
	return g.path
}

var (
	logInput   = genFile{env: "SEARCH_BENCH_FILE", name: "bench.log", minSize: benchSize, write: writeBenchFile}
	namesInput = genFile{env: "SEARCH_NAMES_FILE", name: "names.txt", minSize: 1, write: writeNamesFile}
)

// benchFile returns the generated 100 MiB log file.
func benchFile(b *testing.B) string { return logInput.get(b) }

// namesFile returns the generated list of file names, one per line.
func namesFile(b *testing.B) string { return namesInput.get(b) }

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
		n, err := w.WriteString(benchLine(rng))
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

// benchLine returns one generated log line, '\n' included.
func benchLine(rng *rand.Rand) string {
	ts := fmt.Sprintf("2026-10-04T%02d:%02d:%02d.%03dZ host-%02d app[%d]:",
		rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.IntN(40), 1000+rng.IntN(9000))
	switch r := rng.IntN(1000); {
	case r == 0:
		return fmt.Sprintf("%s ERROR disk sd%c%d failed: I/O error at sector %d\n",
			ts, 'a'+rune(rng.IntN(4)), 1+rng.IntN(9), rng.IntN(1<<30))
	case r < 30:
		return fmt.Sprintf("%s WARN slow request id=%08x path=/api/v1/items/%d dur=%dms\n",
			ts, rng.Uint32(), rng.IntN(100000), 500+rng.IntN(5000))
	}
	return fmt.Sprintf("%s INFO request id=%08x path=/api/v1/items/%d status=200 dur=%dms\n",
		ts, rng.Uint32(), rng.IntN(100000), rng.IntN(500))
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
	cpu := cpuTime()
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
	reportCPU(b, cpu)
	b.ReportMetric(float64(matches), "matches")
}

// reportCPU reports the CPU time per operation since cpu (cpuTime before the loop),
// which bench/search_vs_grep.sh compares with grep's: unlike wall time, it does not
// count the time spent waiting for a processor on a loaded machine.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
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

// BenchmarkReplaceRegexNoLiteral walks every match of a pattern without a required
// literal over the file in memory, as the regex replace does before it builds the new
// content: the regex engine's share of a replace. The file is read once, outside the
// timing.
func BenchmarkReplaceRegexNoLiteral(b *testing.B) {
	re, src := benchReplaceInput(b)
	count := 0
	cpu := cpuTime()
	for b.Loop() {
		it, err := newMatchIter(re, src)
		if err != nil {
			b.Fatal(err)
		}
		count = 0
		for m := it.next(); m != nil; m = it.next() {
			count++
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(count), "matches")
}

// BenchmarkReplaceAllNoLiteral is the whole replace of the same matches, the new
// content built too: most of its time is copying 100 MiB into new memory.
func BenchmarkReplaceAllNoLiteral(b *testing.B) {
	re, src := benchReplaceInput(b)
	count := 0
	cpu := cpuTime()
	for b.Loop() {
		var err error
		// The cap is the file's size: the bench file is a few bytes over the
		// action's 100 MiB limit, and the replacement only shortens it.
		if _, count, err = ReplaceAll(re, src, "<$1>", len(src)); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(count), "matches")
}

var (
	replaceSrcOnce sync.Once
	replaceSrc     []byte
)

// pageSink keeps the page-touching loop of benchReplaceInput from being optimised away.
var pageSink byte

// benchReplaceInput returns the pattern and the bench file's content, read once per
// process. The heap is then settled (a collection, freed memory returned) and every
// page of the content read once, so neither the runtime's work on a 100 MiB
// allocation nor the first touch of each new page (about 8 µs a page on a virtual
// machine, some 0.2 s for the file, whatever reads it) lands in the timed operations:
// they time the matching.
func benchReplaceInput(b *testing.B) (*regexp.Regexp, []byte) {
	re, err := Compile(benchRegexNoLiteral, false)
	if err != nil {
		b.Fatal(err)
	}
	path := benchFile(b)
	replaceSrcOnce.Do(func() {
		if replaceSrc, err = os.ReadFile(path); err == nil {
			debug.FreeOSMemory()
			for i := 0; i < len(replaceSrc); i += 4096 {
				pageSink ^= replaceSrc[i]
			}
		}
	})
	if replaceSrc == nil {
		b.Fatalf("reading %s: %v", path, err)
	}
	b.SetBytes(int64(len(replaceSrc)))
	return re, replaceSrc
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
			cpu := cpuTime()
			for b.Loop() {
				n = 0
				for _, name := range names {
					if c.match(name) {
						n++
					}
				}
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(n), "matches")
		})
	}
}

// BenchmarkMatcher matches in-memory log lines, one at a time as the searcher does,
// with the DFA Matcher and with Go's regexp, for patterns of several kinds: no
// literal (the accelerated start state), assertions (no acceleration), a folded
// class, non-ASCII text, and an anchored pattern that dies early.
func BenchmarkMatcher(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	var lines [][]byte
	size := 0
	for size < 4<<20 {
		l := []byte(strings.TrimSuffix(benchLine(rng), "\n"))
		if rng.IntN(8) == 0 {
			l = append(l, " café über"...)
		}
		lines = append(lines, l)
		size += len(l)
	}
	for _, p := range []struct{ name, pattern string }{
		{"no_literal", benchRegexNoLiteral},
		{"word_boundaries", `\bid=[a-f0-9]{8}\b.*\bdur=\d{4}ms`},
		{"folded", `(?i)dur=[0-9]{4}MS`},
		{"non_ASCII", `[éü]\pL+`},
		{"anchored", `^\S+ \S+ \S+: WARN`},
	} {
		re, err := Compile(p.pattern, false)
		if err != nil {
			b.Fatal(err)
		}
		for _, eng := range []struct {
			name  string
			match func([]byte) bool
		}{
			{"dfa", NewMatcher(re).Match},
			{"regexp", re.Match},
		} {
			b.Run(p.name+"/"+eng.name, func(b *testing.B) {
				b.SetBytes(int64(size))
				n := 0
				for b.Loop() {
					n = 0
					for _, l := range lines {
						if eng.match(l) {
							n++
						}
					}
				}
				b.ReportMetric(float64(n), "matches")
			})
		}
	}
}
