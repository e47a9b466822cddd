package sdk

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
	"github.com/yuzugo/yuzu/sdk/internal/wire"
)

func init() {
	wire.RegisterServer(func(p *Plugin) pluginv1.PluginServiceServer {
		return newServer(p, hclog.NewNullLogger())
	})
}

// server implements the protocol for one Plugin.
type server struct {
	pluginv1.UnimplementedPluginServiceServer
	p   *Plugin
	log hclog.Logger

	// stop is cancelled when the plugin is asked to stop; every command's context
	// derives from it.
	stop     context.Context
	stopNow  context.CancelFunc
	inflight sync.WaitGroup

	mu      sync.RWMutex
	cfg     Config
	running map[string]context.CancelFunc // by invocation id
}

func newServer(p *Plugin, log hclog.Logger) *server {
	stop, cancel := context.WithCancel(context.Background())
	return &server{p: p, log: log, stop: stop, stopNow: cancel, running: map[string]context.CancelFunc{}}
}

// shutdown cancels every command in flight and waits up to grace for them to end.
func (s *server) shutdown(grace time.Duration) {
	s.stopNow()
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
	}
}

func (s *server) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return &pluginv1.DescribeResponse{Manifest: manifestToProto(s.p)}, nil
}

func (s *server) Configure(ctx context.Context, req *pluginv1.ConfigureRequest) (*pluginv1.ConfigureResponse, error) {
	cfg := configFromProto(req)
	if cfg.LogLevel != "" {
		if lvl := hclog.LevelFromString(cfg.LogLevel); lvl != hclog.NoLevel {
			s.log.SetLevel(lvl)
		}
	}
	if s.p.configure != nil {
		if err := s.p.configure(ctx, cfg); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "configure %s: %v", s.p.Name, err)
		}
	}
	s.mu.Lock()
	s.cfg = cfg
	s.mu.Unlock()
	return &pluginv1.ConfigureResponse{}, nil
}

func (s *server) Execute(req *pluginv1.ExecuteRequest, stream pluginv1.PluginService_ExecuteServer) error {
	s.inflight.Add(1)
	defer s.inflight.Done()

	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	stopWatch := context.AfterFunc(s.stop, cancel)
	defer stopWatch()
	if id := req.GetInvocationId(); id != "" {
		s.mu.Lock()
		if _, dup := s.running[id]; dup {
			s.mu.Unlock()
			return status.Errorf(codes.AlreadyExists, "invocation %q is already running", id)
		}
		s.running[id] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.running, id)
			s.mu.Unlock()
		}()
	}
	r := requestFromProto(req)
	if !r.Deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, r.Deadline)
		defer cancelDeadline()
	}

	// Rows go out from the Output's sender goroutine and progress from the handler's:
	// a gRPC stream takes one Send at a time.
	var sendMu sync.Mutex
	send := func(ev *pluginv1.ExecuteResponse) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(ev)
	}
	out := newOutput(func(batch []string) error {
		return send(rowsToProto(batch))
	})
	if req.GetAcceptsProgress() {
		out.progress = func(done, total uint64, unit string) error {
			return send(progressToProto(done, total, unit))
		}
	}
	s.mu.RLock()
	cfg := s.cfg
	s.mu.RUnlock()
	log := s.log.With("action", r.Action)
	if id := r.CommandID; id != "" {
		log = log.With("command_id", id)
	}
	r.Config, r.Log = cfg, log
	var res Result
	if a, ok := s.p.byName[r.Action]; ok {
		if err := checkCommand(a, req.GetParameters()); err != nil {
			res = out.Fail(err.Error())
		} else {
			res = s.call(ctx, a, r, out)
		}
	} else {
		// The upstream contract: this one row carries no error| prefix.
		out.Line("unknown action: " + r.Action)
		res = failed
	}
	res, err := out.finish(res)
	if err != nil {
		return err
	}
	return send(resultToProto(res))
}

// checkCommand runs the checks a command meets before its handler: every declared
// parameter's rules, then, for an action that takes only what it declares, no other
// parameter.
func checkCommand(a *Action, params map[string]string) error {
	if err := CheckParams(a.Params, params); err != nil {
		return err
	}
	if a.OnlyDeclaredParams {
		return CheckDeclared(a.Name, a.Params, params)
	}
	return nil
}

// Cancel cancels the context of a running command; its stream stays open so that the
// agent sees the result once the handler returns.
func (s *server) Cancel(_ context.Context, req *pluginv1.CancelRequest) (*pluginv1.CancelResponse, error) {
	s.mu.RLock()
	cancel, ok := s.running[req.GetInvocationId()]
	s.mu.RUnlock()
	if ok {
		cancel()
	}
	return &pluginv1.CancelResponse{Found: ok}, nil
}

// call runs a handler, turning a returned error into an error row and a panic into an
// error row too, so one bad command never takes the plugin down.
func (s *server) call(ctx context.Context, a *Action, r *Request, out *Output) (res Result) {
	defer func() {
		if v := recover(); v != nil {
			r.Log.Error("action panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res = out.Failf("plugin panicked in %s: %v", a.Name, v)
		}
	}()
	res, err := a.handler(ctx, r, out)
	if err != nil {
		return out.Fail(err.Error())
	}
	return res
}
