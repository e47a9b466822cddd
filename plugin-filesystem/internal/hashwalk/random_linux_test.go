package hashwalk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-filesystem/internal/pathcheck"
)

// expectation is computed by a second, deliberately simple walker built on
// os.ReadDir and Lstat, to check the real walk's counters.
type expectation struct {
	c       Counters
	matches []Match
}

func expect(t *testing.T, dir string, depth, maxDepth int, target string, ex *expectation) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		ex.c.Visited++
		p := filepath.Join(dir, de.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		switch m := fi.Mode(); {
		case m&os.ModeSymlink != 0:
			ex.c.SkippedSymlink++
		case m.IsDir():
			if depth+1 < maxDepth {
				expect(t, p, depth+1, maxDepth, target, ex)
			}
		case m.IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			ex.c.Hashed += int64(len(data))
			if hexSHA(data) == target {
				ex.matches = append(ex.matches, Match{Path: p, Size: int64(len(data))})
			}
		default:
			ex.c.SkippedNotRegular++
		}
	}
}

type treeGen struct {
	rng     *rand.Rand
	target  []byte
	outside string
	made    []string
	seq     int
}

func (g *treeGen) fill(t *testing.T, dir string, level int) {
	n := g.rng.IntN(9)
	for i := range n {
		g.seq++
		p := filepath.Join(dir, fmt.Sprintf("e%d-%d-%d", level, i, g.seq))
		var err error
		switch k := g.rng.IntN(12); {
		case k < 2:
			err = os.WriteFile(p, g.target, 0o644)
		case k < 3:
			err = os.WriteFile(p, nil, 0o644)
		case k < 6:
			data := make([]byte, g.rng.IntN(200<<10))
			for j := range data {
				data[j] = byte(g.rng.Uint32())
			}
			err = os.WriteFile(p, data, 0o644)
		case k < 7:
			to := g.outside
			if len(g.made) > 0 && g.rng.IntN(2) == 0 {
				to = g.made[g.rng.IntN(len(g.made))]
			}
			err = os.Symlink(to, p)
		case k < 8:
			err = unix.Mkfifo(p, 0o644)
		case k < 9:
			err = bindSocket(p)
		default:
			if level >= 6 {
				continue
			}
			if err = os.Mkdir(p, 0o755); err == nil {
				g.fill(t, p, level+1)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		g.made = append(g.made, p)
	}
}

// bindSocket leaves a socket file at p (a net.Listener would remove it on
// close). Socket addresses are short, so bind in a short directory and move
// the socket into place.
func bindSocket(p string) error {
	tmp, err := os.MkdirTemp("", "s")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(tmp, "s")}); err != nil {
		return err
	}
	return os.Rename(filepath.Join(tmp, "s"), p)
}

func TestWalkRandomTreesMatchIndependentCount(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	outside := canonTemp(t)
	target := []byte("random tree target")
	writeFile(t, filepath.Join(outside, "x"), target)
	for iter := range 8 {
		root := canonTemp(t)
		g := &treeGen{rng: rng, target: target, outside: outside}
		for len(g.made) < 20 {
			g.fill(t, root, 0)
		}
		maxDepth := 1 + rng.IntN(7)
		var ex expectation
		expect(t, root, 0, maxDepth, hexSHA(target), &ex)
		sort.Slice(ex.matches, func(a, b int) bool { return ex.matches[a].Path < ex.matches[b].Path })

		req := request(root, hexSHA(target))
		req.MaxDepth = maxDepth
		req.Workers = 1 + rng.IntN(4)
		pathcheck.ForceFallback(rng.IntN(2) == 0)
		r := mustWalk(t, context.Background(), req)
		pathcheck.ForceFallback(false)
		if r.Counters != ex.c || r.Reason != ReasonNone {
			t.Fatalf("iteration %d (max_depth %d, %d entries made): got %+v %s, want %+v", iter, maxDepth, len(g.made), r.Counters, r.Reason, ex.c)
		}
		if fmt.Sprint(r.Matches) != fmt.Sprint(ex.matches) {
			t.Fatalf("iteration %d: matches %v, want %v", iter, r.Matches, ex.matches)
		}
	}
}
