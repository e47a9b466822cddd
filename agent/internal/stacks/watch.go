package stacks

import (
	"os"
	"os/signal"

	"github.com/hashicorp/go-hclog"
)

// Watch writes a dump of every goroutine's stack into the log, at info, each
// time the agent receives the dump signal (SIGUSR1 where there is one), and goes on
// running. It answers "where is it waiting?" for an agent that seems stuck, without
// stopping it as Go's SIGQUIT dump would (docs/agent.md). The returned function stops
// watching.
func Watch(log hclog.Logger) func() {
	if dumpSignal == nil {
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, dumpSignal)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				log.Info("goroutine dump", "stacks", Dump())
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
