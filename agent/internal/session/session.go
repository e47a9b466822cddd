// Package session is the agent's link to its fleet server (`yuzu-agent run`): it
// registers over gRPC (TLS by default), keeps the Subscribe stream on which the server
// pushes commands, runs each command through the dispatcher and the supervisor, relays
// the rows and the outcome back, sends heartbeats, and reconnects with jittered
// exponential backoff when the connection breaks. docs/fleet.md in the repository
// describes the behaviour and the reasons.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/agent/internal/identity"
	"github.com/yuzugo/yuzu/agent/internal/journal"
	"github.com/yuzugo/yuzu/agent/internal/metrics"
	"github.com/yuzugo/yuzu/agent/internal/spool"
	"github.com/yuzugo/yuzu/agent/internal/sysinfo"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/update"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// SessionHeader is the metadata key that carries the session id on Subscribe.
const SessionHeader = "x-yuzu-session-id"

// Limits on the connection.
const (
	// MaxMessageBytes bounds one message either way. A command's parameters are
	// bounded well below it (maxParamBytes), so a large but valid command is answered
	// REJECTED with the reason instead of breaking the stream.
	MaxMessageBytes = 16 << 20
	// registerTimeout bounds one Register call.
	registerTimeout = 30 * time.Second
	// maxSessionIDBytes bounds the session id the server hands out; it travels back
	// in a header.
	maxSessionIDBytes = 1024
	// outboxLimit bounds the messages waiting for the connection.
	outboxLimit = 16 << 20
	// drainWait bounds how long a stopping agent waits for its last answers to leave.
	drainWait = 5 * time.Second
	// closeWait bounds how long it then waits for the server to end the half-closed
	// command stream: long enough for gRPC to write what it buffers.
	closeWait = time.Second
	// renewCloseWait is closeWait when the connection ends for a renewed
	// certificate: the agent is not stopping, and a server slow to end the call
	// may still be writing commands to it, which cancelling would lose.
	renewCloseWait = 10 * time.Second
	// probeEvery is how often a heartbeat goes while answers wait for confirmation
	// (the spool), instead of once per Heartbeat.
	probeEvery = 2 * time.Second
)

// Defaults of the answer spool's bounds (docs/fleet.md).
const (
	DefaultSpoolAnswerBytes = 64 << 20
	DefaultSpoolTotalBytes  = 512 << 20
)

// Plugins is what the session needs from the supervisor.
type Plugins interface {
	dispatch.Executor
	Describe(ctx context.Context, plugin string) (host.Manifest, error)
	Plugins() []string
	// Has says whether a plugin of that name is there now: the catalog may change
	// while the agent runs.
	Has(name string) bool
	Status() []supervisor.Status
}

// Options configure a Session.
type Options struct {
	// Server is the fleet server's host:port.
	Server string
	// Identity gives each connection its TLS configuration, read afresh, and keeps
	// the identity the agent enrolls for; nil means plaintext (--no-tls).
	Identity *identity.Source
	// EnrollmentToken is sent with every Register when set, until the agent has a
	// certificate it enrolled for: that certificate is its identity from then on.
	EnrollmentToken string
	// Heartbeat is the heartbeat period: 30 s.
	Heartbeat time.Duration
	// Timeout is each command's deadline: 600 s.
	Timeout time.Duration
	// AnswerGrace is how long past its deadline a running command may go unanswered
	// before the session answers it itself (TIMEOUT, command_unanswered): 10 s. The
	// supervisor kills a plugin 5 s past the deadline and reports within about 2 s
	// more, so this fires only when something on the path is stuck; a command the
	// agent accepted is always answered (docs/fleet.md).
	AnswerGrace time.Duration

	AgentID      string
	AgentVersion string

	Plugins Plugins
	Journal *journal.Journal
	// SpoolDir holds the answer spool, SpoolAnswerBytes and SpoolTotalBytes bound it
	// per answer and in all (0: the defaults, 64 MiB and 512 MiB; negative: rows are
	// not kept, and a broken stream can lose them, as the FAILURE then says).
	SpoolDir                          string
	SpoolAnswerBytes, SpoolTotalBytes int64
	// Metrics is nil when the metrics endpoint is off.
	Metrics *metrics.Metrics
	Logger  hclog.Logger
	// Dispatch bounds the per-plugin concurrency and the queue (docs/agent.md).
	Dispatch dispatch.Options

	// BackoffBase and BackoffMax shape the reconnect backoff: 1 s doubling, capped
	// at 300 s.
	BackoffBase, BackoffMax time.Duration
	// StopWait bounds how long a stop waits for cancelled commands to answer: 15 s
	// (the supervisor kills a plugin that ignores a cancellation after 5 s).
	StopWait time.Duration
	// Rand returns a uniform integer in [0, k); nil means math/rand/v2.
	Rand func(k int64) int64
	// InstallPlugin installs a build the fleet server delivers (plugin_install, the
	// agent's own action); nil refuses such commands.
	InstallPlugin InstallFunc
	// Update checks for and applies new agent versions (selfupdate.go); nil: never.
	// UpdateInterval (6 h; negative: never) and UpdateSplay (10 min) time the checks.
	Update                      *update.Updater
	UpdateInterval, UpdateSplay time.Duration
	// OnRegistered is called after every accepted registration (the agent confirms
	// a trial of a new version with it).
	OnRegistered func()
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Heartbeat, 30*time.Second)
	def(&o.Timeout, 600*time.Second)
	def(&o.AnswerGrace, 10*time.Second)
	def(&o.BackoffBase, defaultBackoffBase)
	def(&o.BackoffMax, defaultBackoffMax)
	def(&o.StopWait, 15*time.Second)
	if o.UpdateInterval == 0 {
		o.UpdateInterval = defaultUpdateInterval
	}
	def(&o.UpdateSplay, defaultUpdateSplay)
	if o.SpoolAnswerBytes == 0 {
		o.SpoolAnswerBytes = DefaultSpoolAnswerBytes
	}
	if o.SpoolTotalBytes == 0 {
		o.SpoolTotalBytes = DefaultSpoolTotalBytes
	}
	if o.Rand == nil {
		o.Rand = uniform
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// RejectedError means the fleet server refused the registration for good (not
// "pending"): the agent stops rather than knock again and again.
type RejectedError struct{ Reason string }

// Error says what happened.
func (e *RejectedError) Error() string {
	return "the fleet server refused the registration: " + shownReason(e.Reason)
}

// Session is one agent's link to its fleet server.
type Session struct {
	o     Options
	log   hclog.Logger
	out   *spool.Outbox
	spool *spool.Spool
	disp  *dispatch.Dispatcher
	start time.Time

	// life ends when Run has finished for good; pushes that wait for room give up.
	life     context.Context
	endLife  context.CancelFunc
	cmdCtx   context.Context // commands run under it; a stop cancels it
	cancel   context.CancelFunc
	stopOnce sync.Once
	wg       sync.WaitGroup // command goroutines

	mu          sync.Mutex
	inflight    map[string]*command
	waiting     int // commands sleeping their stagger or delay
	paramBytes  int // parameter bytes of the commands in flight
	stopping    bool
	manifests   map[string]host.Manifest // last known, for Register
	tagsWhy     string                   // why the last registration went without tags; "" if it had them
	executedCnt atomic.Int64
	// The connection and session the command stream runs on now (nil, "" between
	// connections), for the agent's own actions that call the server.
	curConn *grpc.ClientConn
	curSID  string

	// What the agent knows of its enrollment and certificate (enroll.go), and why
	// the last connection failed or ended.
	enrollMu sync.Mutex
	enroll   EnrollState
	linkErr  string
	// updateDue is when the next agent update check is due (selfupdate.go).
	updateDue time.Time
	// connections counts the registered connections of this run.
	connections int

	// The journal's health, and answers waiting for it to write (settle).
	heldMu       sync.Mutex
	held         []heldAnswer
	retrying     bool
	journalErr   string
	journalSince time.Time
}

func (s *Session) conn() *grpc.ClientConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.curConn
}

func (s *Session) sid() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.curSID
}

// New returns a Session; Run connects it.
func New(o Options) *Session {
	o.defaults()
	s := &Session{
		o:         o,
		log:       o.Logger,
		out:       spool.NewOutbox(outboxLimit),
		inflight:  map[string]*command{},
		manifests: map[string]host.Manifest{},
		start:     time.Now(),
	}
	if o.Dispatch.Audit == nil {
		o.Dispatch.Audit = o.Logger // every fleet command's audit line, at info
	}
	s.disp = dispatch.New(executor{s}, o.Dispatch)
	s.life, s.endLife = context.WithCancel(context.Background())
	s.cmdCtx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Run keeps the agent connected until ctx ends, then stops gracefully: commands in
// flight are cancelled and answered, their answers sent while the connection lasts
// (and kept in the journal otherwise). It returns nil after a stop, or a
// *RejectedError when the server refused the registration for good.
func (s *Session) Run(ctx context.Context) error {
	defer s.endLife()
	sp, err := spool.NewSpool(s.o.SpoolDir, s.o.SpoolAnswerBytes, s.o.SpoolTotalBytes)
	if err != nil {
		return err
	}
	s.spool = sp
	defer sp.Close()
	s.recover()
	attempt := 0
	var result error
	for {
		if attempt > 0 {
			s.o.Metrics.Reconnect()
			d := backoff(attempt, s.o.BackoffBase, s.o.BackoffMax, s.o.Rand)
			s.log.Info("reconnecting to the fleet server", "attempt", attempt, "in", d.Round(time.Millisecond).String())
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			break
		}
		registered, err := s.connect(ctx)
		// Whatever that stream took and the server has not confirmed goes again,
		// first, on the next one.
		s.spool.Broken()
		if registered {
			attempt = 0
		}
		var rej *RejectedError
		if errors.As(err, &rej) || errors.Is(err, ErrUpdated) {
			result = err
			break
		}
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, errEnrolled) || errors.Is(err, errRenewed) {
			// A new certificate: the next connection presents it, at once.
			attempt = 0
			continue
		}
		s.log.Warn("fleet connection lost", "server", s.o.Server, "error", rows.Printable(errorText(err)))
		s.enrollMu.Lock()
		s.linkErr = rows.Printable(shownLong(errorText(err)))
		s.enrollMu.Unlock()
		attempt++
	}
	s.stop()
	if n := s.out.Len(); n > 0 || s.spool.Unconfirmed() {
		s.log.Info("stopped with answers not yet delivered or confirmed; they are kept and sent after the next start", "queued", n)
	}
	return result
}

// LinkError is why the last connection failed or ended ("" before any did).
func (s *Session) LinkError() string {
	s.enrollMu.Lock()
	defer s.enrollMu.Unlock()
	return s.linkErr
}

func errorText(err error) string {
	if err == nil {
		return "stream ended"
	}
	return err.Error()
}

// recover queues what an earlier run left: answers the server has not confirmed, each
// with the rows the spool kept of it, and an answer for each command that was still
// running when the agent stopped, after its kept rows (it is not run again: it may
// have changed the device already).
func (s *Session) recover() {
	for _, w := range s.o.Journal.Warnings() {
		s.log.Warn("command journal", "problem", rows.Printable(w))
	}
	for _, e := range s.o.Journal.Unsent() {
		resp := &agentv1.CommandResponse{}
		if err := proto.Unmarshal(e.Response, resp); err != nil {
			s.log.Warn("command journal: dropped an answer that does not decode", "id", rows.Printable(e.ID), "error", err)
			continue
		}
		s.spool.Restore(e.ID, resp)
	}
	for _, id := range s.o.Journal.Interrupted() {
		s.log.Warn("command was interrupted when the agent stopped; answering FAILURE, not running it again", "id", rows.Printable(id))
		s.spool.Restore(id, nil)
		resp := &agentv1.CommandResponse{
			CommandId: id,
			Status:    agentv1.CommandResponse_FAILURE,
			ExitCode:  1,
			Error:     &commonv1.ErrorDetail{Code: "command_interrupted", Message: msgInterrupted},
			SentAt:    spool.Now(),
		}
		rel := &relay{s: s, id: id}
		_ = rel.end(rows.Format("error", msgInterrupted))
		if row, _ := s.spool.Seal(resp, true); row != "" {
			_ = s.out.Push(s.life, spool.Msg{Resp: spool.Running(id, row)})
		}
		s.settle(id, resp, true)
	}
	for _, id := range s.o.Journal.NotStarted() {
		s.log.Warn("command was waiting to start when the agent stopped; answering REJECTED, it did not run", "id", rows.Printable(id))
		s.settle(id, rejected(id, msgNotStarted), false)
	}
	s.spool.Sweep()
	s.spool.Broken()
}

const (
	msgInterrupted = "command interrupted: the agent stopped before it finished; it was not run again"
	msgNotStarted  = "agent restarted before the command started; it did not run"
)

// settle records a command's terminal answer in the journal, then queues it: the
// record that replays an answer exists before the answer leaves.
//
// An answer of a command that ran is held while the journal cannot record it, and
// retried (holdRetry): sent unrecorded, it could be followed after a restart by a
// second, different terminal for the same command (the restart would find the
// command started and not finished, and answer it interrupted). An answer that
// settles nothing (a refusal: the command never ran) goes out unrecorded, since a
// repeat may run anyway.
func (s *Session) settle(id string, resp *agentv1.CommandResponse, replay bool) {
	data, err := proto.Marshal(slim(resp))
	if err != nil {
		s.log.Error("command answer does not encode; sending it unrecorded", "id", rows.Printable(id), "error", err)
		_ = s.out.Push(s.life, spool.Msg{Resp: resp, Kind: spool.KindTerminal})
		return
	}
	e := journal.Entry{ID: id, Response: data, Replay: replay}
	s.heldMu.Lock()
	holding := len(s.held) > 0
	s.heldMu.Unlock()
	if !holding {
		if err = s.o.Journal.Finish(e); err == nil {
			s.journalWrote()
			_ = s.out.Push(s.life, spool.Msg{Resp: resp, Kind: spool.KindTerminal})
			return
		}
		s.journalFailed(err)
	}
	if !replay {
		_ = s.out.Push(s.life, spool.Msg{Resp: resp, Kind: spool.KindTerminal})
		return
	}
	s.heldMu.Lock()
	s.held = append(s.held, heldAnswer{e: e, resp: resp})
	start := !s.retrying
	s.retrying = true
	s.heldMu.Unlock()
	if start {
		go s.holdRetry()
	}
}

// heldAnswer is an answer waiting for the journal to record it.
type heldAnswer struct {
	e    journal.Entry
	resp *agentv1.CommandResponse
}

// holdRetry records the held answers, oldest first, and sends each once it is on
// disk, trying again with a growing pause (up to 30 s) while the journal fails, until
// none is left or the session ends (the next start then answers them interrupted,
// their one terminal).
func (s *Session) holdRetry() {
	pause := time.Second
	for {
		s.heldMu.Lock()
		if len(s.held) == 0 {
			s.retrying = false
			s.heldMu.Unlock()
			return
		}
		h := s.held[0]
		s.heldMu.Unlock()
		if err := s.o.Journal.Finish(h.e); err != nil {
			s.journalFailed(err)
			select {
			case <-s.life.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, 30*time.Second)
			continue
		}
		s.journalWrote()
		pause = time.Second
		s.heldMu.Lock()
		s.held = s.held[1:]
		s.heldMu.Unlock()
		_ = s.out.Push(s.life, spool.Msg{Resp: h.resp, Kind: spool.KindTerminal})
	}
}

// journalFailed notes that the journal could not write: said once, at error, when
// it starts failing; status shows it until it writes again.
func (s *Session) journalFailed(err error) {
	s.heldMu.Lock()
	first := s.journalErr == ""
	s.journalErr = err.Error()
	if first {
		s.journalSince = time.Now()
	}
	s.heldMu.Unlock()
	if first {
		s.log.Error("command journal cannot write: new commands are refused (REJECTED) and answers are held until it can", "error", rows.Printable(err.Error()))
	}
	s.o.Metrics.JournalWritable(false)
}

// journalWrote notes that the journal wrote.
func (s *Session) journalWrote() {
	s.heldMu.Lock()
	was := s.journalErr
	s.journalErr = ""
	s.heldMu.Unlock()
	if was != "" {
		s.log.Info("command journal writes again", "was", rows.Printable(was))
		s.o.Metrics.JournalWritable(true)
	}
}

// JournalState says whether the journal writes: the last error while it does not
// (empty when it does), since when, and how many answers wait for it.
func (s *Session) JournalState() (problem string, since time.Time, held int) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	return s.journalErr, s.journalSince, len(s.held)
}

// slimmed replaces an answer's output when the answer is too large to keep.
const slimmed = "[output replaced in dedup store: response exceeded size cap; command completed]"

// slim returns resp, or a copy small enough for the journal.
func slim(resp *agentv1.CommandResponse) *agentv1.CommandResponse {
	if proto.Size(resp) <= journal.MaxResponseBytes {
		return resp
	}
	c := proto.CloneOf(resp)
	c.Output = slimmed
	c.Payload = nil
	if e := c.GetError(); e != nil {
		e.Message = truncate(e.Message, 512)
		e.Metadata = nil
	}
	return c
}

// stop cancels the commands in flight and waits for their answers, at most StopWait.
func (s *Session) stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopping = true
		n := len(s.inflight)
		s.mu.Unlock()
		if n > 0 {
			s.log.Info("stopping: cancelling the commands in flight", "commands", n)
		}
		s.cancel()
		done := make(chan struct{})
		go func() {
			s.wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(s.o.StopWait):
			s.log.Warn("stopping: some commands did not answer in time", "wait", s.o.StopWait.String())
		}
	})
}

// dial opens a connection to the server, with the TLS files as they are now.
func (s *Session) dial() (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if s.o.Identity != nil {
		cfg, err := s.o.Identity.Config()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	return grpc.NewClient(s.o.Server,
		grpc.WithTransportCredentials(creds),
		grpc.WithUserAgent("yuzu-agent/"+s.o.AgentVersion),
		// Upstream's keepalive: a ping after 60 s of silence, 20 s to answer, also
		// between commands, so a dead peer is noticed on an idle stream.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 60 * time.Second, Timeout: 20 * time.Second, PermitWithoutStream: true}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes)),
	)
}

// connect registers, subscribes and serves the stream until it breaks or ctx ends.
// registered reports whether Register succeeded. When ctx ends while the stream is
// up, connect stops the agent gracefully before it returns, so the last answers still
// use the stream.
func (s *Session) connect(ctx context.Context) (registered bool, err error) {
	conn, err := s.dial()
	if err != nil {
		return false, err
	}
	defer conn.Close()
	client := agentv1.NewAgentServiceClient(conn)
	sid, err := s.register(ctx, client)
	if err != nil {
		return false, err
	}
	sctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), SessionHeader, sid))
	defer cancel()
	stream, err := client.Subscribe(sctx)
	if err != nil {
		return true, fmt.Errorf("subscribe: %w", err)
	}
	s.o.Metrics.Connected(true)
	defer s.o.Metrics.Connected(false)
	s.mu.Lock()
	s.curConn, s.curSID = conn, sid
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.curConn, s.curSID = nil, ""
		s.mu.Unlock()
	}()
	s.log.Info("connected to the fleet server", "server", s.o.Server, "session", rows.Printable(sid))
	if s.o.OnRegistered != nil {
		s.o.OnRegistered()
	}
	s.enrollMu.Lock()
	s.connections++
	first := s.connections == 1
	s.enrollMu.Unlock()

	var wg sync.WaitGroup
	recvDone := make(chan error, 1)
	sendDone := make(chan error, 1)
	wg.Add(3)
	go func() {
		defer wg.Done()
		recvDone <- s.receive(sctx, stream)
	}()
	// The sender gets a context of its own: drain stops it before the half-close,
	// so that a Send and the CloseSend never run at once (see drain).
	sendCtx, stopSend := context.WithCancel(sctx)
	defer stopSend()
	go func() {
		defer wg.Done()
		sendDone <- s.send(sendCtx, stream)
	}()
	go func() {
		defer wg.Done()
		s.heartbeat(sctx, client, sid)
	}()
	renewed := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.renew(sctx, client, renewed)
	}()
	go func() {
		defer wg.Done()
		s.watchExpiry(sctx)
	}()
	updated := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.updates(sctx, client, first, updated)
	}()
	select {
	case err = <-recvDone:
	case err = <-sendDone:
	case <-updated:
		// A new version of the agent is in place: stop as at SIGTERM, and let the
		// service manager start the new one.
		s.stop()
		s.drain(stream, recvDone, stopSend, sendDone, closeWait)
		err = ErrUpdated
	case <-renewed:
		// The next connection presents the new certificate: this one ends as a stop
		// would end it, but with the commands in flight left running.
		s.drain(stream, recvDone, stopSend, sendDone, renewCloseWait)
		err = errRenewed
	case <-ctx.Done():
		s.stop()
		s.drain(stream, recvDone, stopSend, sendDone, closeWait)
		err = nil
	}
	cancel()
	wg.Wait()
	return true, err
}

// drain lets the last answers reach the server before the stream is closed: it waits
// (at most drainWait) until the sender has handed every message to the stream,
// half-closes it, and waits (at most wait) for the server to end the call, handling
// the commands it still sends meanwhile.
// Cancelling the call at once would reset it and drop what gRPC still buffers.
func (s *Session) drain(stream agentv1.AgentService_SubscribeClient, recvDone <-chan error, stopSend func(), sendDone <-chan error, wait time.Duration) {
	dctx, cancel := context.WithTimeout(context.Background(), drainWait)
	defer cancel()
	err := s.out.WaitEmpty(dctx)
	for err == nil && s.spool.Planned() {
		// A re-send is still under way; it is short, and bounded by the drain.
		select {
		case <-dctx.Done():
			err = dctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err != nil {
		s.log.Warn("stopping: not every answer left before the drain deadline; the rest are kept for the next start", "waiting", s.out.Len())
		return
	}
	// Only the sender touches the sending side until it has returned: gRPC does not
	// allow CloseSend while a Send is under way, and a half-close racing a Send (an
	// answer that came in just after the outbox emptied) can reset the call, losing
	// both that answer, which would then count as delivered, and the commands the
	// server is writing at that moment. Whatever the sender leaves in the outbox goes
	// out on the next connection.
	stopSend()
	select {
	case <-sendDone:
	case <-dctx.Done():
		s.log.Warn("stopping: the command stream's sender did not stop before the drain deadline")
		return
	}
	_ = stream.CloseSend()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-recvDone:
		if err == nil {
			// The server ended the call after reading the agent's half-close, so
			// it has read every message before it.
			s.confirm(time.Now().Add(s.spool.ConfirmDelay))
		}
	case <-t.C:
		s.log.Debug("stopping: the server did not end the command stream after the agent's last answer")
	}
}

// register sends RegisterRequest and reads the answer: accepted gives the session id;
// "pending" is retried later; any other refusal is final.
func (s *Session) register(ctx context.Context, client agentv1.AgentServiceClient) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	req := &agentv1.RegisterRequest{Info: s.agentInfo(rctx)}
	enrolling := s.o.Identity != nil && s.o.Identity.Enrolling()
	if s.o.Identity == nil || !s.o.Identity.Enrolled() || enrolling {
		req.EnrollmentToken = s.o.EnrollmentToken
	}
	if enrolling {
		csr, err := s.o.Identity.CSR(s.o.AgentID, false)
		if err != nil {
			return "", fmt.Errorf("enrollment: %w", err)
		}
		req.CsrPem = csr
	}
	resp, err := client.Register(rctx, req)
	if err != nil {
		return "", fmt.Errorf("register: %w", err)
	}
	pending := resp.GetEnrollmentStatus() == "pending" || strings.Contains(strings.ToLower(resp.GetRejectReason()), "pending")
	switch {
	case !resp.GetAccepted() && !pending:
		if enrolling || resp.GetEnrollmentStatus() == "denied" {
			s.setEnroll(func(e *EnrollState) {
				e.Status, e.Reason, e.Since = "denied", shownReason(resp.GetRejectReason()), time.Now()
			})
		}
		return "", &RejectedError{Reason: resp.GetRejectReason()}
	case pending:
		s.setEnroll(func(e *EnrollState) {
			if e.Status != "pending" {
				e.Since = time.Now()
			}
			e.Status, e.Reason = "pending", shownReason(resp.GetRejectReason())
		})
		s.log.Info("enrollment pending approval on the fleet server; retrying later", "reason", shownReason(resp.GetRejectReason()))
		return "", errPending
	}
	if enrolling {
		if err := s.enrolled(resp); err != nil {
			return "", err
		}
		if resp.GetIssuedCertificate() != "" {
			return "", errEnrolled
		}
	}
	sid := resp.GetSessionId()
	if len(sid) > maxSessionIDBytes || !printableASCII(sid) {
		return "", fmt.Errorf("register: the server sent a session id that cannot travel in a header (%d bytes)", len(sid))
	}
	return sid, nil
}

// printableASCII reports whether s may be a gRPC header value.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// agentInfo describes the agent; the tags are asked of the tags plugin afresh for
// every registration (tags.go), so a tag set since the last one reaches the server on
// the next (re)connect.
func (s *Session) agentInfo(ctx context.Context) *agentv1.AgentInfo {
	p := sysinfo.Current()
	tags := s.deviceTags(ctx)
	return &agentv1.AgentInfo{
		AgentId:      s.o.AgentID,
		Hostname:     sysinfo.Hostname(),
		Platform:     &commonv1.Platform{Os: p.OS, Arch: p.Arch, Version: p.Version},
		AgentVersion: s.o.AgentVersion,
		Plugins:      s.pluginInfos(ctx),
		ScopableTags: tags,
	}
}

// pluginInfos describes every plugin that has answered at least once, its actions as
// capabilities. A plugin that cannot start now keeps its last known description.
func (s *Session) pluginInfos(ctx context.Context) []*commonv1.PluginInfo {
	var out []*commonv1.PluginInfo
	for _, name := range s.o.Plugins.Plugins() {
		m, err := s.o.Plugins.Describe(ctx, name)
		s.mu.Lock()
		if err == nil {
			s.manifests[name] = m
		} else {
			m, err = s.manifests[name], nil
		}
		s.mu.Unlock()
		if m.Name == "" {
			s.log.Warn("plugin left out of the registration: it has never started", "plugin", name)
			continue
		}
		info := &commonv1.PluginInfo{Name: m.Name, Version: m.Version, Description: m.Description}
		for _, a := range m.Actions {
			info.Capabilities = append(info.Capabilities, a.Name)
		}
		out = append(out, info)
	}
	return out
}

// receive reads commands until the stream ends.
func (s *Session) receive(ctx context.Context, stream agentv1.AgentService_SubscribeClient) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			// io.EOF: the server ended the call (after the agent's half-close, it has
			// read everything; see drain).
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("receive: %w", err)
		}
		s.handle(ctx, req)
	}
}

// send hands the stream what the spool plans to send again, then the outbox, in order,
// until the stream fails or ctx ends. A message leaves the plan or the outbox only
// once Send has taken it, and the spool then keeps it until it is confirmed.
func (s *Session) send(ctx context.Context, stream agentv1.AgentService_SubscribeClient) error {
	for {
		m, planned := s.spool.Next()
		if !planned {
			var err error
			if m, err = s.out.Peek(ctx); err != nil {
				return nil
			}
		}
		if err := stream.Send(m.Resp); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("send: %w", err)
		}
		if planned {
			s.spool.Pop(time.Now())
		} else {
			s.out.Pop()
			s.spool.Handed(m, time.Now())
		}
	}
}

// confirm tells the journal that the answers a heartbeat sent at sent has confirmed
// are delivered (the spool forgets them).
func (s *Session) confirm(sent time.Time) {
	for _, id := range s.spool.Confirm(sent.Add(-s.spool.ConfirmDelay)) {
		s.o.Journal.MarkSent(id)
	}
}

// heartbeat reports the agent's status every Heartbeat until ctx ends, and every
// probeEvery while answers wait for confirmation: an answered heartbeat confirms what
// left the command stream well before it (spool). A failed heartbeat is logged; the
// command stream decides whether the connection is up.
func (s *Session) heartbeat(ctx context.Context, client agentv1.AgentServiceClient, sid string) {
	last := time.Now()
	// The registration told the server the plugins as they are now; a change (an
	// upgrade, a rollback, a plugin added) goes out with the next probe, not the next
	// heartbeat period.
	plugins := s.pluginsTag()
	t := time.NewTicker(min(s.o.Heartbeat, probeEvery))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tags := s.statusTags()
		if time.Since(last) < s.o.Heartbeat && !s.spool.Unconfirmed() && tags[pluginsTag] == plugins {
			continue
		}
		sent := time.Now()
		last = sent
		hctx, cancel := context.WithTimeout(ctx, min(s.o.Heartbeat, 30*time.Second))
		_, err := client.Heartbeat(hctx, &agentv1.HeartbeatRequest{SessionId: sid, SentAt: spool.Now(), StatusTags: tags})
		cancel()
		switch {
		case err == nil:
			plugins = tags[pluginsTag]
			s.confirm(sent)
		case ctx.Err() == nil:
			s.log.Warn("heartbeat failed", "error", rows.Printable(err.Error()))
		}
	}
}

// pluginsTag is the heartbeat's status tag that lists every plugin and the version it
// runs (docs/fleet.md): this agent's own, which an upstream server keeps as one more
// tag or ignores.
const pluginsTag = "yuzu.plugins"

// pluginsTag lists the plugins as `name=version` joined by commas, sorted by name:
// the version the plugin's child said, else "unknown"; "refused" for a plugin that
// may not run.
func (s *Session) pluginsTag() string {
	var b strings.Builder
	for i, st := range s.o.Plugins.Status() {
		if i > 0 {
			b.WriteByte(',')
		}
		v := st.Version
		switch {
		case st.State == supervisor.StateRefused:
			v = "refused"
		case v == "":
			v = "unknown"
		}
		// A version is the plugin's own text: it must not break the list apart.
		b.WriteString(st.Name + "=" + strings.NewReplacer(",", "_", "=", "_").Replace(rows.Printable(v)))
	}
	return b.String()
}

// statusTags are the heartbeat's status fields.
func (s *Session) statusTags() map[string]string {
	running, idle, failed := 0, 0, 0
	for _, st := range s.o.Plugins.Status() {
		switch st.State {
		case supervisor.StateRunning:
			running++
		case supervisor.StateIdle:
			idle++
		case supervisor.StateFailed, supervisor.StateRefused:
			failed++
		}
	}
	healthy := "1"
	if failed > 0 {
		healthy = "0"
	}
	s.mu.Lock()
	inflight := len(s.inflight)
	s.mu.Unlock()
	return map[string]string{
		"yuzu.uptime_s":           strconv.FormatInt(int64(time.Since(s.start).Seconds()), 10),
		"yuzu.commands_executed":  strconv.FormatInt(s.executedCnt.Load(), 10),
		"yuzu.commands_in_flight": strconv.Itoa(inflight),
		"yuzu.plugins_loaded":     strconv.Itoa(running),
		"yuzu.plugins_idle":       strconv.Itoa(idle),
		"yuzu.plugins_failed":     strconv.Itoa(failed),
		"yuzu.os":                 runtime.GOOS,
		"yuzu.arch":               sysinfo.Arch(runtime.GOARCH),
		"yuzu.agent_version":      s.o.AgentVersion,
		"yuzu.healthy":            healthy,
		pluginsTag:                s.pluginsTag(),
	}
}
