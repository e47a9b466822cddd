// Package fleetserver is a test fleet server: an in-process implementation of the
// yuzu.agent.v1 service the agent's `run` mode talks to, on loopback, with
// certificates made per run (PKI). It records every registration, heartbeat and
// response, pushes commands to the connected agent, and can be stopped abruptly and
// started again on the same address with its records intact. The end-to-end tests
// and `make demo` use it; it is never shipped.
package fleetserver

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/deliveryv1"
)

// SessionHeader is the metadata key of the session id on Subscribe.
const SessionHeader = "x-yuzu-session-id"

// Options shape the server's answers.
type Options struct {
	// TLS is the server's TLS configuration; nil serves plaintext.
	TLS *tls.Config
	// EnrollmentToken, when set, is required: another token is refused for good.
	// With an Issuer, an agent that presents a certificate of its authority needs no
	// token.
	EnrollmentToken string
	// Issuer, when set, signs enrolling agents' CSRs and renews their certificates
	// (issuer.go); TLS should then be its ServerTLS, and the command stream and
	// heartbeats need a client certificate.
	Issuer *Issuer
	// Pending answers "pending" to this many registrations before accepting.
	Pending int
	// OnResponse, when set, sees every response as it arrives.
	OnResponse func(*agentv1.CommandResponse)
	// OnRegister, when set, sees every registration and the answer given to it.
	OnRegister func(*agentv1.RegisterRequest, *agentv1.RegisterResponse)
}

// Server is a running test fleet server. Its records survive Stop and Restart.
type Server struct {
	opts Options
	addr string

	mu        sync.Mutex
	grpc      *grpc.Server
	sessions  map[string]bool
	agentOf   map[string]string // session id -> agent id
	regs      []*agentv1.RegisterRequest
	accepted  int
	pending   int
	heartbeat []*agentv1.HeartbeatRequest
	responses map[string][]*agentv1.CommandResponse
	terminal  map[string]chan struct{}
	subs      map[string]*subscriber // agent id -> its open Subscribe stream
	last      string                 // the agent that subscribed last: Send's target
	plugins   map[string]string      // agent id -> its heartbeat's yuzu.plugins tag
	published map[buildKey]*Build    // plugin builds agents may download (delivery.go)
	changed   chan struct{}          // closed and replaced whenever anything is recorded
	updates   agentBuilds            // agent builds offered (update.go)
}

// subscriber is one agent's open Subscribe stream.
type subscriber struct {
	out  chan *agentv1.CommandRequest
	done chan struct{}
}

// Start serves on addr ("127.0.0.1:0" picks a port).
func Start(addr string, o Options) (*Server, error) {
	s := &Server{
		opts:      o,
		sessions:  map[string]bool{},
		agentOf:   map[string]string{},
		responses: map[string][]*agentv1.CommandResponse{},
		terminal:  map[string]chan struct{}{},
		subs:      map[string]*subscriber{},
		plugins:   map[string]string{},
		published: map[buildKey]*Build{},
		changed:   make(chan struct{}),
	}
	if err := s.listen(addr); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) listen(addr string) error {
	var l net.Listener
	var err error
	// The port of a server that was just stopped may take a moment to be free.
	for i := 0; i < 50; i++ {
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(64 << 20),
		grpc.MaxSendMsgSize(64 << 20),
		// The agent pings every 60 s, also between commands.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 30 * time.Second, PermitWithoutStream: true}),
	}
	if s.opts.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.opts.TLS)))
	}
	g := grpc.NewServer(opts...)
	agentv1.RegisterAgentServiceServer(g, &service{s: s})
	deliveryv1.RegisterPluginDeliveryServiceServer(g, &delivery{s: s})
	s.mu.Lock()
	s.grpc, s.addr = g, l.Addr().String()
	s.mu.Unlock()
	go func() { _ = g.Serve(l) }()
	return nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Stop ends the server at once, as a crash would: connections are closed without a
// goodbye.
func (s *Server) Stop() {
	s.mu.Lock()
	g := s.grpc
	s.grpc = nil
	s.mu.Unlock()
	if g != nil {
		g.Stop()
	}
}

// Restart serves again on the same address, records intact.
func (s *Server) Restart() error { return s.listen(s.Addr()) }

// notifyLocked is notify for a caller that holds another lock than s.mu.
func (s *Server) notifyLocked() {
	s.mu.Lock()
	s.notify()
	s.mu.Unlock()
}

func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait blocks until cond (called with s.mu held) is true or ctx ends.
func (s *Server) wait(ctx context.Context, cond func() bool) error {
	s.mu.Lock()
	for !cond() {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
	return nil
}

// Registrations returns every Register request received, in order.
func (s *Server) Registrations() []*agentv1.RegisterRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*agentv1.RegisterRequest(nil), s.regs...)
}

// WaitAccepted waits until n registrations have been accepted and returns the last.
func (s *Server) WaitAccepted(ctx context.Context, n int) (*agentv1.RegisterRequest, error) {
	if err := s.wait(ctx, func() bool { return s.accepted >= n }); err != nil {
		return nil, fmt.Errorf("waiting for %d accepted registrations (have %d of %d requests): %w", n, s.accepted, len(s.Registrations()), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.regs[len(s.regs)-1], nil
}

// WaitSubscribed waits until an agent holds a Subscribe stream.
func (s *Server) WaitSubscribed(ctx context.Context) error {
	return s.wait(ctx, func() bool { return len(s.subs) > 0 })
}

// WaitAgents waits until n different agents hold a Subscribe stream each.
func (s *Server) WaitAgents(ctx context.Context, n int) error {
	if err := s.wait(ctx, func() bool { return len(s.subs) >= n }); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("waiting for %d subscribed agents (have %d): %w", n, len(s.subs), err)
	}
	return nil
}

// Plugins returns the plugins and versions an agent runs, as its last heartbeat said
// (the yuzu.plugins tag), else as its last registration did.
func (s *Server) Plugins(agentID string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	if tag, ok := s.plugins[agentID]; ok {
		for _, kv := range strings.Split(tag, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
		return out
	}
	for i := len(s.regs) - 1; i >= 0; i-- {
		if s.regs[i].GetInfo().GetAgentId() == agentID {
			for _, p := range s.regs[i].GetInfo().GetPlugins() {
				out[p.GetName()] = p.GetVersion()
			}
			break
		}
	}
	return out
}

// WaitPlugin waits until an agent reports running a plugin at a version.
func (s *Server) WaitPlugin(ctx context.Context, agentID, plugin, version string) error {
	for {
		if s.Plugins(agentID)[plugin] == version {
			return nil
		}
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("agent %s: %s is %q, want %s: %w", agentID, plugin, s.Plugins(agentID)[plugin], version, ctx.Err())
		}
	}
}

// Agent is one agent the server has accepted, as its last registration describes it.
type Agent struct {
	Registration *agentv1.RegisterRequest
	// Subscribed says the agent holds the Subscribe stream commands go to.
	Subscribed bool
}

// Agents returns every agent accepted so far, in order of its first registration.
func (s *Server) Agents() []Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	accepted := map[string]bool{}
	for _, id := range s.agentOf {
		accepted[id] = true
	}
	var out []Agent
	at := map[string]int{}
	for _, reg := range s.regs {
		id := reg.GetInfo().GetAgentId()
		if !accepted[id] {
			continue
		}
		a := Agent{Registration: reg, Subscribed: s.subs[id] != nil}
		if i, seen := at[id]; seen {
			out[i] = a
			continue
		}
		at[id] = len(out)
		out = append(out, a)
	}
	return out
}

// Heartbeats returns every heartbeat received, in order.
func (s *Server) Heartbeats() []*agentv1.HeartbeatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*agentv1.HeartbeatRequest(nil), s.heartbeat...)
}

// WaitHeartbeats waits until n heartbeats have arrived.
func (s *Server) WaitHeartbeats(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return len(s.heartbeat) >= n })
}

// Send pushes a command to the connected agent (the one that subscribed last),
// waiting for one to connect.
func (s *Server) Send(ctx context.Context, cmd *agentv1.CommandRequest) error {
	return s.send(ctx, "", cmd)
}

// SendTo pushes a command to one agent, waiting for it to connect.
func (s *Server) SendTo(ctx context.Context, agentID string, cmd *agentv1.CommandRequest) error {
	return s.send(ctx, agentID, cmd)
}

func (s *Server) send(ctx context.Context, agentID string, cmd *agentv1.CommandRequest) error {
	for {
		var sub *subscriber
		if err := s.wait(ctx, func() bool {
			id := agentID
			if id == "" {
				id = s.last
			}
			sub = s.subs[id]
			return sub != nil
		}); err != nil {
			if agentID != "" {
				return fmt.Errorf("agent %s not subscribed: %w", agentID, err)
			}
			return fmt.Errorf("no agent subscribed: %w", err)
		}
		select {
		case sub.out <- cmd:
			return nil
		case <-sub.done:
			// That stream ended; wait for the next.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Responses returns every response received for id, in order.
func (s *Server) Responses(id string) []*agentv1.CommandResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*agentv1.CommandResponse(nil), s.responses[id]...)
}

// Result is a command's answer as the server assembles it.
type Result struct {
	// Rows are the rows of the RUNNING messages, split at newlines, without the
	// timing and progress messages.
	Rows []string
	// Timing is the __timing__ message, if any.
	Timing string
	// Progress are the __progress__ messages, in order.
	Progress []string
	// Messages counts the RUNNING messages that carried rows.
	Messages int
	// Terminal is the first terminal (non-RUNNING) response.
	Terminal *agentv1.CommandResponse
	// Terminals counts the terminal responses.
	Terminals int
}

// Result returns what has arrived for id so far.
func (s *Server) Result(id string) Result {
	var r Result
	for _, resp := range s.Responses(id) {
		switch {
		case resp.GetStatus() != agentv1.CommandResponse_RUNNING:
			r.Terminals++
			if r.Terminal == nil {
				r.Terminal = resp
			}
		case strings.HasPrefix(resp.GetOutput(), "__timing__|"):
			r.Timing = resp.GetOutput()
		case strings.HasPrefix(resp.GetOutput(), "__progress__|"):
			if r.Terminal != nil {
				// Never after the terminal: kept where a test sees it as a row.
				r.Rows = append(r.Rows, resp.GetOutput())
				break
			}
			r.Progress = append(r.Progress, resp.GetOutput())
		case resp.GetOutput() != "":
			r.Messages++
			r.Rows = append(r.Rows, strings.Split(resp.GetOutput(), "\n")...)
		}
	}
	return r
}

// WaitTerminal waits for the terminal response of id and returns the result.
func (s *Server) WaitTerminal(ctx context.Context, id string) (Result, error) {
	s.mu.Lock()
	ch := s.terminalChan(id)
	s.mu.Unlock()
	select {
	case <-ch:
		return s.Result(id), nil
	case <-ctx.Done():
		return s.Result(id), fmt.Errorf("no terminal response for %q: %w", id, ctx.Err())
	}
}

// terminalChan is closed when id's first terminal response arrives; s.mu is held.
func (s *Server) terminalChan(id string) chan struct{} {
	ch, ok := s.terminal[id]
	if !ok {
		ch = make(chan struct{})
		s.terminal[id] = ch
	}
	return ch
}

// Do sends a command and waits for its terminal response.
func (s *Server) Do(ctx context.Context, cmd *agentv1.CommandRequest) (Result, error) {
	if err := s.Send(ctx, cmd); err != nil {
		return Result{}, err
	}
	return s.WaitTerminal(ctx, cmd.GetCommandId())
}

func (s *Server) record(resp *agentv1.CommandResponse) {
	if f := s.opts.OnResponse; f != nil {
		f(resp)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := resp.GetCommandId()
	s.responses[id] = append(s.responses[id], resp)
	if resp.GetStatus() != agentv1.CommandResponse_RUNNING {
		ch := s.terminalChan(id)
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	s.notify()
}

// service implements yuzu.agent.v1.AgentService.
type service struct {
	agentv1.UnimplementedAgentServiceServer
	s *Server
}

func (v *service) Register(ctx context.Context, req *agentv1.RegisterRequest) (*agentv1.RegisterResponse, error) {
	resp, err := v.register(ctx, req)
	if f := v.s.opts.OnRegister; f != nil && err == nil {
		f(req, resp)
	}
	return resp, err
}

func (v *service) register(ctx context.Context, req *agentv1.RegisterRequest) (*agentv1.RegisterResponse, error) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	s.regs = append(s.regs, req)
	tokenOK := s.opts.EnrollmentToken == "" || req.GetEnrollmentToken() == s.opts.EnrollmentToken
	if s.opts.Issuer != nil {
		if resp := s.opts.Issuer.answer(ctx, req, tokenOK); resp != nil {
			if resp.GetAccepted() {
				resp.SessionId = s.newSession(req.GetInfo().GetAgentId())
			}
			return resp, nil
		}
		tokenOK = true // an enrolled agent: its certificate is its identity
	}
	if !tokenOK {
		return &agentv1.RegisterResponse{Accepted: false, RejectReason: "invalid enrollment token", EnrollmentStatus: "denied"}, nil
	}
	if s.pending < s.opts.Pending {
		s.pending++
		return &agentv1.RegisterResponse{Accepted: false, RejectReason: "enrollment pending approval", EnrollmentStatus: "pending"}, nil
	}
	sid := s.newSession(req.GetInfo().GetAgentId())
	s.accepted++
	return &agentv1.RegisterResponse{SessionId: sid, Accepted: true, EnrollmentStatus: "enrolled"}, nil
}

// newSession makes a session id for an agent; s.mu is held.
func (s *Server) newSession(agentID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	sid := hex.EncodeToString(b[:])
	s.sessions[sid] = true
	s.agentOf[sid] = agentID
	return sid
}

// authenticated says whether a call may use the command stream or heartbeat: with an
// Issuer, only with a client certificate of its authority (the registration alone
// can be an enrollment's, without one).
func (s *Server) authenticated(ctx context.Context, agentID string) bool {
	if s.opts.Issuer == nil {
		return true
	}
	return s.opts.Issuer.note(ctx, agentID) != nil
}

func (v *service) Heartbeat(ctx context.Context, req *agentv1.HeartbeatRequest) (*agentv1.HeartbeatResponse, error) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sessions[req.GetSessionId()] || !s.authenticated(ctx, s.agentOf[req.GetSessionId()]) {
		return nil, status.Error(codes.Unauthenticated, "unknown session")
	}
	s.heartbeat = append(s.heartbeat, req)
	if tag, ok := req.GetStatusTags()["yuzu.plugins"]; ok {
		s.plugins[s.agentOf[req.GetSessionId()]] = tag
	}
	s.notify()
	return &agentv1.HeartbeatResponse{Acknowledged: true, ServerTime: &commonv1.Timestamp{MillisEpoch: time.Now().UnixMilli()}}, nil
}

func (v *service) Subscribe(stream agentv1.AgentService_SubscribeServer) error {
	s := v.s
	md, _ := metadata.FromIncomingContext(stream.Context())
	ids := md.Get(SessionHeader)
	s.mu.Lock()
	known := len(ids) == 1 && s.sessions[ids[0]] && s.authenticated(stream.Context(), s.agentOf[ids[0]])
	s.mu.Unlock()
	if !known {
		return status.Error(codes.Unauthenticated, "Subscribe without a registered session and a client certificate")
	}
	sub := &subscriber{out: make(chan *agentv1.CommandRequest), done: make(chan struct{})}
	s.mu.Lock()
	agent := s.agentOf[ids[0]]
	s.subs[agent], s.last = sub, agent
	// A new registration tells the plugins anew: the heartbeat's word is older.
	delete(s.plugins, agent)
	s.notify()
	s.mu.Unlock()
	defer func() {
		close(sub.done)
		s.mu.Lock()
		if s.subs[agent] == sub {
			delete(s.subs, agent)
		}
		s.notify()
		s.mu.Unlock()
	}()
	recvErr := make(chan error, 1)
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			s.record(resp)
		}
	}()
	for {
		select {
		case cmd := <-sub.out:
			if err := stream.Send(cmd); err != nil {
				return err
			}
		case <-recvErr:
			return nil
		case <-stream.Context().Done():
			return nil
		}
	}
}
