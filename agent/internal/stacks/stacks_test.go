package stacks

import (
	"runtime"
	"strings"
	"testing"
)

func TestDumpShowsEveryGoroutine(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	go parkedForTheDump(block)
	// The goroutine may not have parked yet; its frame shows either way once it runs.
	for i := 0; ; i++ {
		d := Dump()
		if strings.Contains(d, "stacks.parkedForTheDump") {
			if strings.Contains(d, "\t") {
				t.Errorf("the dump keeps tabs")
			}
			if !strings.Contains(d, "stacks.TestDumpShowsEveryGoroutine") {
				t.Errorf("the dump lacks the calling goroutine:\n%s", d)
			}
			return
		}
		if i == 1000 {
			t.Fatalf("the dump lacks the parked goroutine:\n%s", d)
		}
		runtime.Gosched()
	}
}

func parkedForTheDump(block chan struct{}) { <-block }
