package sdk

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/yuzugo/yuzu/sdk/internal/wire"
	"github.com/yuzugo/yuzu/sdk/proctree"
)

// stopGrace is how long in-flight commands get to notice cancellation when the plugin
// is told to stop, before the process exits anyway.
const stopGrace = 2 * time.Second

// closedByAgent is the reason logged when the agent ends the plugin normally.
const closedByAgent = "agent closed the connection"

// parentPoll is how often the plugin checks that the agent that started it is alive.
const parentPoll = 500 * time.Millisecond

// startedByAgent is true when go-plugin started this process as a plugin: it put the
// magic cookie in the environment. Package variables are set before any init runs.
var startedByAgent = os.Getenv(wire.Handshake.MagicCookieKey) == wire.Handshake.MagicCookieValue

// handshakeOut is the real stdout, saved by the guard, where go-plugin must print its
// handshake line. It is nil when the process was not started as a plugin.
var handshakeOut *os.File

// The stdout guard runs at package initialisation, before the plugin's main or any
// of its package initialisers can print: a single stray line on stdout before the
// handshake makes the agent refuse the plugin. It only runs when the process was
// started as a plugin (go-plugin put the magic cookie in its environment), so a
// program that merely imports the SDK, such as the agent, keeps its stdout.
func init() {
	if startedByAgent {
		handshakeOut = guardStdout()
	}
}

// Serve runs the plugin until the agent stops it or goes away. It never returns.
//
// Run by hand (not by the agent), the binary prints that it is a plugin and exits 1.
func Serve(p *Plugin) {
	if err := p.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "yuzu plugin:", err)
		os.Exit(1)
	}
	// go-plugin prints the handshake on os.Stdout and then replaces os.Stdout with its
	// own pipe, so the real stdout is exposed only for that moment. A goroutine of the
	// plugin printing in exactly that window could still reach it.
	if handshakeOut != nil {
		os.Stdout = handshakeOut
	}
	// Once the agent is gone, nobody reads the plugin's stderr: a write there must
	// fail, not end the process with SIGPIPE before it has killed what it started.
	signal.Ignore(syscall.SIGPIPE)

	log := hclog.New(&hclog.LoggerOptions{
		Name:       p.Name,
		Level:      hclog.Info,
		Output:     os.Stderr, // the real stderr; go-plugin swaps os.Stderr later
		JSONFormat: true,
	})
	srv := newServer(p, log)

	exit := func(code int, why string) {
		// The agent closing the connection is the normal end of every child; only
		// the other reasons are news.
		level := hclog.Info
		if code == 0 && why == closedByAgent {
			level = hclog.Debug
		}
		srv.shutdown(stopGrace)
		// Nothing the plugin started may outlive it: its tools (their own process
		// groups) and anything they started. This comes before the log line below,
		// which may fail when the agent is gone.
		proctree.KillDescendants(os.Getpid())
		log.Log(level, "plugin stopping", "reason", why)
		// The agent is gone (or someone else ended the plugin): no one will end
		// its box, which may hold processes the walk above cannot find. Ending it
		// ends this process too.
		if why != closedByAgent {
			proctree.EndOwnCgroup()
		}
		os.Exit(code)
	}
	watchParent(parentPoll, func() { exit(1, "agent is gone") })

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		exit(0, "SIGTERM")
	}()

	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.Sets(srv),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(wire.MaxMessageBytes), grpc.MaxSendMsgSize(wire.MaxMessageBytes))
			return grpc.NewServer(opts...)
		},
		Logger: log,
	})
	// plugin.Serve returns when the agent closes the connection.
	exit(0, closedByAgent)
}
