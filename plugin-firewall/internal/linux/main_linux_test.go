package linux

import (
	"context"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// childEnv selects a helper mode when the test binary re-executes itself. Some checks
// need a process of their own: one that runs as another user, or one that may use up
// its file descriptors without disturbing the other tests.
const childEnv = "FIREWALL_LINUX_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild runs one helper mode and prints its rows, one per line.
func runChild(mode string) int {
	var got []rows.Row
	switch mode {
	case "state":
		got = New().State(context.Background())
	case "fd-exhausted":
		// Lower the descriptor limit and use every remaining descriptor, so the next
		// socket the reader opens fails with EMFILE.
		lim := unix.Rlimit{Cur: 64, Max: 64}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			return 2
		}
		var held []*os.File
		for {
			f, err := os.Open(os.DevNull)
			if err != nil {
				break
			}
			held = append(held, f)
		}
		got = newNftReader().Read(context.Background()).Diag
		for _, f := range held {
			_ = f.Close()
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode", mode)
		return 2
	}
	for _, r := range got {
		fmt.Println(r.Text())
	}
	return 0
}
