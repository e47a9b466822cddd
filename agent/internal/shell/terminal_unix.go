//go:build !windows

package shell

import (
	"os"
	"os/signal"
	"syscall"
)

// enableVT has nothing to do: Unix terminals take VT sequences.
func enableVT(*os.File) error { return nil }

// watchResize calls f whenever the terminal changes size (SIGWINCH), so that the
// line editor wraps long lines where the terminal does.
func watchResize(f func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	go func() {
		for range ch {
			f()
		}
	}()
}
