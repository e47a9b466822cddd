package sdk

import (
	"context"
	"crypto/tls"
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

// serverTLS is the certificate and key the host made for this child (wire.ServerTLSEnv),
// taken out of the environment before anything could start a process that inherits
// it; empty when an older host uses go-plugin's AutoMTLS.
var serverTLS = takeEnv(wire.ServerTLSEnv)

// envScrubErr is why the key could not be cleared from the initial environment block
// (envscrub_linux.go); Serve logs it.
var envScrubErr error

// takeEnv returns a variable and removes it from the environment: from Go's copy, so
// that no child inherits it, and, for a plugin started by the agent, from the block
// /proc/self/environ shows, so that no action of the plugin can read it back.
func takeEnv(name string) string {
	v, ok := os.LookupEnv(name)
	_ = os.Unsetenv(name)
	if ok && startedByAgent {
		envScrubErr = scrubEnvBlock(name)
	}
	return v
}

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

// ServeOption changes how Serve runs the plugin. Serve without options is what the
// agent needs; options are for development.
type ServeOption func(*serveConfig)

type serveConfig struct {
	debug bool
}

// WithDebug, when on is true, runs the plugin by hand instead of under the agent, so
// that it can be started under a debugger: it listens on a private socket, prints one
// line `YUZU_PLUGIN_REATTACH=<json>` on stderr and serves until SIGINT or SIGTERM. A
// test attaches to it with that line instead of starting a child (sdktest.Attach).
// The connection has none of the agent's mutual TLS: wire it to a flag of your own
// (`-debug`) and never turn it on in a shipped plugin.
func WithDebug(on bool) ServeOption { return func(c *serveConfig) { c.debug = on } }

// Serve runs the plugin until the agent stops it or goes away. It never returns.
//
// Run by hand (not by the agent, and without WithDebug), the binary prints that it is
// a plugin and exits 1.
func Serve(p *Plugin, opts ...ServeOption) {
	var sc serveConfig
	for _, o := range opts {
		o(&sc)
	}
	if err := p.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "yuzu plugin:", err)
		os.Exit(1)
	}
	if sc.debug {
		serveDebug(p)
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
	if envScrubErr != nil {
		log.Warn("the mutual TLS key stays readable in this process's initial environment (/proc/self/environ)", "error", envScrubErr.Error())
	}
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
		GRPCServer:       grpcServer,
		Logger:           log,
		TLSProvider:      tlsProvider,
	})
	// plugin.Serve returns when the agent closes the connection.
	exit(0, closedByAgent)
}

// serveDebug serves p for a debugger session (WithDebug) and exits when interrupted.
func serveDebug(p *Plugin) {
	log := hclog.New(&hclog.LoggerOptions{Name: p.Name, Level: hclog.Debug, Output: os.Stderr, JSONFormat: true})
	srv := newServer(p, log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go func() {
		select {
		case rc := <-reattach:
			line, err := wire.EncodeReattach(rc)
			if err != nil {
				fmt.Fprintln(os.Stderr, "yuzu plugin: reattach:", err)
				return
			}
			fmt.Fprintln(os.Stderr, wire.ReattachEnv+"="+line)
		case <-closed:
		}
	}()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.Sets(srv),
		GRPCServer:       grpcServer,
		Logger:           log,
		Test:             &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed},
	})
	<-closed
	srv.shutdown(stopGrace)
	proctree.KillDescendants(os.Getpid())
	os.Exit(0)
}

// tlsProvider gives go-plugin the TLS the host made for this child (docs/agent.md
// "Mutual TLS"). Without it (an older host) it returns nothing, and go-plugin's
// AutoMTLS answers the certificate the host sent.
func tlsProvider() (*tls.Config, error) {
	if serverTLS == "" {
		return nil, nil
	}
	return wire.ServerTLS(serverTLS, os.Getenv(wire.ClientCertEnv))
}

// grpcServer builds the plugin's gRPC server with the protocol's message limit.
func grpcServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(wire.MaxMessageBytes), grpc.MaxSendMsgSize(wire.MaxMessageBytes))
	return grpc.NewServer(opts...)
}
