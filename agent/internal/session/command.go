package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/yuzugo/yuzu/agent/dispatch"
	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/agent/internal/journal"
	"github.com/yuzugo/yuzu/agent/internal/metrics"
	"github.com/yuzugo/yuzu/agent/internal/spool"
	"github.com/yuzugo/yuzu/agent/internal/stacks"
	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// Bounds on what a server may ask for. They keep a hostile or broken server from
// making the agent use unbounded memory or time.
const (
	// maxActionBytes bounds an action name.
	maxActionBytes = 128
	// maxParams bounds the entries of one command's parameter map.
	maxParams = 1024
	// maxParamKeyBytes bounds one parameter name.
	maxParamKeyBytes = 1024
	// maxParamBytes bounds one command's parameters, names and values together; it
	// leaves room under the 16 MiB plugin message.
	maxParamBytes = 8 << 20
	// maxInflightParamBytes bounds the parameters of every command in flight.
	maxInflightParamBytes = 64 << 20
	// maxWaiting bounds the commands sleeping their stagger or delay.
	maxWaiting = 1000
	// maxAnswering is room, in the bound of commands in flight (maxInflight), for
	// commands the dispatcher has returned that are still sending their answer. With
	// the dispatcher's slots and queue and the waiting room it makes the bound, so
	// that a flood is refused at the door: 2,048 + the slots with the default queue.
	maxAnswering = 48
	// maxStagger and maxDelay cap stagger_seconds and delay_seconds; maxWait caps
	// their sum.
	maxStagger = 300 * time.Second
	maxDelay   = 300 * time.Second
	maxWait    = 600 * time.Second
	// maxOutput bounds the rows of one RUNNING message (rows joined by "\n"); a
	// single longer row travels alone.
	maxOutput = 64 << 10
	// maxShown bounds server text echoed back in an answer or a log line.
	maxShown = 128
)

// The texts of the answers the agent gives itself (docs/fleet.md).
const (
	msgDuplicate = "duplicate command still in flight"
	// msgOutcomeUnknown answers a repeat of a command the damaged journal lost the
	// outcome of.
	msgOutcomeUnknown = "command outcome unknown: the agent's journal record of it was damaged; it was not run again"
	msgExpired        = "command expired"
	msgStopping       = "agent is shutting down"
	msgCancelled      = "command cancelled: the agent is stopping"
	timingPrefix      = "__timing__|exec_ms="
	// progressKind begins a progress message: __progress__|done=N|total=M|unit=U
	// (docs/fleet.md).
	progressKind = "__progress__"
)

// progressEvery is the least time between two progress messages of one command: the
// fleet link carries what an operator can read, not every report the plugin makes.
const progressEvery = time.Second

// command is one command in flight.
type command struct {
	id     string
	req    *agentv1.CommandRequest
	expiry time.Time     // zero: none
	wait   time.Duration // stagger plus delay
	bytes  int           // parameter bytes

	// Set when the dispatcher starts the command (start) and once it has returned.
	// Read then, or by the session's own answer when it never returned (hence
	// atomic).
	started atomic.Bool
	began   atomic.Int64 // when it went to the plugin, Unix nanoseconds
	ran     atomic.Int64 // nanoseconds in the plugin, once back
}

// inPlugin is how long the command has been with its plugin: the whole time once it
// came back, else until now.
func (c *command) inPlugin() time.Duration {
	if d := c.ran.Load(); d > 0 {
		return time.Duration(d)
	}
	if b := c.began.Load(); b > 0 {
		return max(time.Since(time.Unix(0, b)), time.Nanosecond)
	}
	return 0
}

// onStart is the command's OnStart: the dispatcher has admitted it and the plugin is
// about to have it. The start record is on disk first: were the agent killed while the
// command runs, the restart must know it ran, and answer it. A start the journal
// cannot record refuses the command: run unrecorded, a repeat of its id after a
// restart would run it a second time (a full disk is an ordinary event on endpoints).
func (s *Session) onStart(c *command) error {
	asked := time.Now()
	err := <-s.o.Journal.Started(c.id)
	s.o.Metrics.StartWait(s.pluginLabel(c.req.GetPlugin()), time.Since(asked))
	if err != nil {
		s.journalFailed(err)
		return &journalError{err: err}
	}
	s.journalWrote()
	c.began.Store(time.Now().UnixNano())
	c.started.Store(true)
	s.o.Metrics.QueueAdd(-1)
	return nil
}

// journalError refuses a command whose start the journal could not record.
type journalError struct{ err error }

func (e *journalError) Error() string {
	return "the command journal cannot record this command's start (" + e.err.Error() + "); it did not run"
}

func (e *journalError) Unwrap() error { return e.err }

// returned records how long a started command was with its plugin, once the
// dispatcher has returned it.
func (c *command) returned() {
	if b := c.began.Load(); b > 0 {
		c.ran.Store(int64(max(time.Since(time.Unix(0, b)), time.Nanosecond)))
	}
}

func (c *command) expired(t time.Time) bool { return !c.expiry.IsZero() && t.After(c.expiry) }

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// shown makes server text safe to echo: valid UTF-8, control bytes escaped, bounded.
func shown(s string) string { return rows.Printable(truncate(s, maxShown)) }

// shownLong is shown with room for an agent's own error message.
func shownLong(s string) string { return rows.Printable(truncate(s, 1024)) }

// shownReason is a server's free text (a registration's reject_reason), bounded like
// shownLong and saying how long it was: a server may send megabytes, and the agent logs
// it at every attempt.
func shownReason(s string) string {
	if len(s) <= 1024 {
		return rows.Printable(s)
	}
	return fmt.Sprintf("%s (%d bytes in all)", shownLong(s), len(s))
}

// handle takes one command from the stream. Everything that can be refused at once is
// refused here, on the receiving goroutine; the rest runs on a goroutine of its own.
func (s *Session) handle(ctx context.Context, req *agentv1.CommandRequest) {
	id := req.GetCommandId()
	switch {
	case id == "":
		s.reject(ctx, req, "invalid command: empty command_id")
		return
	case len(id) > journal.MaxIDBytes:
		s.reject(ctx, req, fmt.Sprintf("invalid command: command_id of %d bytes, at most %d", len(id), journal.MaxIDBytes))
		return
	}
	s.mu.Lock()
	stopping := s.stopping
	_, dup := s.inflight[id]
	s.mu.Unlock()
	switch {
	case stopping:
		s.reject(ctx, req, msgStopping)
		return
	case dup:
		s.log.Debug("duplicate command still in flight", "id", shown(id))
		_ = s.out.Push(ctx, spool.Msg{Resp: spool.Running(id, msgDuplicate), Keep: true})
		return
	}
	if e, ok := s.o.Journal.Lookup(id); ok {
		s.replay(ctx, e)
		return
	}
	if reason := s.invalid(req); reason != "" {
		s.reject(ctx, req, reason)
		return
	}
	if err := s.checkRequirements(req); err != nil {
		// Refused, not run and not recorded: a repeat after an upgrade may run.
		s.reject(ctx, req, err.Error())
		return
	}
	c := &command{id: id, req: req, bytes: paramBytes(req.GetParameters())}
	if ms := req.GetExpiresAt().GetMillisEpoch(); ms > 0 {
		c.expiry = time.UnixMilli(ms)
	}
	if c.expired(time.Now()) {
		s.reject(ctx, req, msgExpired)
		return
	}
	c.wait = s.waitFor(req)
	s.mu.Lock()
	full := len(s.inflight) >= s.maxInflight() ||
		s.paramBytes+c.bytes > maxInflightParamBytes ||
		(c.wait > 0 && s.waiting >= maxWaiting)
	if !full {
		s.inflight[id] = c
		s.paramBytes += c.bytes
		if c.wait > 0 {
			s.waiting++
		}
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if full {
		s.reject(ctx, req, dispatch.ErrQueueFull.Error())
		return
	}
	s.o.Journal.Accepted(id)
	s.o.Metrics.QueueAdd(1)
	s.log.Debug("command", "id", shown(id), "plugin", shown(req.GetPlugin()), "action", shown(req.GetAction()), "wait", c.wait.String())
	go s.run(c)
}

// maxInflight is the dispatcher's capacity (the slots of every plugin and its queue,
// as the dispatcher itself counts them) plus the waiting room and the commands being
// answered.
func (s *Session) maxInflight() int {
	l := s.disp.Limits()
	return l.PerPlugin*len(s.o.Plugins.Plugins()) + l.QueueSize + maxWaiting + maxAnswering
}

// invalid returns why a command cannot run, or "".
func (s *Session) invalid(req *agentv1.CommandRequest) string {
	if p := req.GetPlugin(); p != AgentPlugin && !s.o.Plugins.Has(p) {
		return "plugin not found: " + shown(p)
	}
	switch a := req.GetAction(); {
	case a == "":
		return "invalid command: empty action"
	case len(a) > maxActionBytes:
		return fmt.Sprintf("invalid command: action of %d bytes, at most %d", len(a), maxActionBytes)
	}
	params := req.GetParameters()
	if len(params) > maxParams {
		return fmt.Sprintf("invalid command: %d parameters, at most %d", len(params), maxParams)
	}
	for k := range params {
		if k == "" {
			return "invalid command: a parameter with an empty name"
		}
		if len(k) > maxParamKeyBytes {
			return fmt.Sprintf("invalid command: parameter name of %d bytes, at most %d", len(k), maxParamKeyBytes)
		}
	}
	if n := paramBytes(params); n > maxParamBytes {
		return fmt.Sprintf("invalid command: parameters of %d bytes, at most %d", n, maxParamBytes)
	}
	return ""
}

func paramBytes(params map[string]string) int {
	n := 0
	for k, v := range params {
		n += len(k) + len(v)
	}
	return n
}

// waitFor is how long a command sleeps before it runs: delay_seconds plus a uniform
// random part of stagger_seconds, each capped at 300 s and negative values taken as
// 0, the sum capped at 600 s.
func (s *Session) waitFor(req *agentv1.CommandRequest) time.Duration {
	clamp := func(secs int32, ceiling time.Duration) time.Duration {
		if secs <= 0 {
			return 0
		}
		return min(time.Duration(secs)*time.Second, ceiling)
	}
	stagger := clamp(req.GetStaggerSeconds(), maxStagger)
	delay := clamp(req.GetDelaySeconds(), maxDelay)
	wait := delay
	if stagger > 0 {
		wait += time.Duration(s.o.Rand(int64(stagger) + 1))
	}
	return min(wait, maxWait)
}

// reject answers a command REJECTED at once, without running or recording it.
func (s *Session) reject(ctx context.Context, req *agentv1.CommandRequest, reason string) {
	// Debug, not info: a server flooding bad commands must not flood the log.
	s.log.Debug("command rejected", "id", shown(req.GetCommandId()), "plugin", shown(req.GetPlugin()), "action", shown(req.GetAction()), "reason", rows.Printable(reason))
	s.o.Metrics.Command(s.pluginLabel(req.GetPlugin()), "rejected", 0)
	_ = s.out.Push(ctx, spool.Msg{Resp: rejected(req.GetCommandId(), reason), Keep: true})
}

func rejected(id, reason string) *agentv1.CommandResponse {
	return &agentv1.CommandResponse{CommandId: id, Status: agentv1.CommandResponse_REJECTED, Output: reason, SentAt: spool.Now()}
}

// pluginLabel is the metrics label for a plugin name: known names only.
func (s *Session) pluginLabel(name string) string {
	if name == AgentPlugin || s.o.Plugins.Has(name) {
		return name
	}
	return metrics.OtherPlugin
}

// replay answers a repeated command id with the recorded answer, freshly dated. A
// command whose record was damaged is answered as such (docs/fleet.md): it ran, or may
// have, and must not run again.
func (s *Session) replay(ctx context.Context, e journal.Entry) {
	if e.Unknown {
		s.log.Warn("repeated command id whose journal record was damaged: answering outcome unknown, not running it again", "id", shown(e.ID))
		_ = s.out.Push(ctx, spool.Msg{Resp: spool.Running(e.ID, rows.Format("error", msgOutcomeUnknown)), Keep: true})
		_ = s.out.Push(ctx, spool.Msg{Resp: &agentv1.CommandResponse{CommandId: e.ID, Status: agentv1.CommandResponse_FAILURE, ExitCode: 1, SentAt: spool.Now(),
			Error: &commonv1.ErrorDetail{Code: "outcome_unknown", Message: msgOutcomeUnknown}}, Keep: true})
		return
	}
	resp := &agentv1.CommandResponse{}
	if err := proto.Unmarshal(e.Response, resp); err != nil {
		s.log.Error("command journal: recorded answer does not decode", "id", shown(e.ID), "error", err)
		resp = &agentv1.CommandResponse{CommandId: e.ID, Status: agentv1.CommandResponse_FAILURE, ExitCode: 1,
			Error: &commonv1.ErrorDetail{Code: "agent_dispatch_error", Message: "the recorded answer of this command is damaged; it was not run again"}}
	}
	resp.SentAt = spool.Now()
	s.log.Info("repeated command id answered from the journal", "id", shown(e.ID), "status", resp.GetStatus().String())
	_ = s.out.Push(ctx, spool.Msg{Resp: resp, Keep: true})
}

// run sleeps the command's stagger and delay, runs it and answers.
func (s *Session) run(c *command) {
	defer s.wg.Done()
	if c.wait > 0 {
		ok := s.sleep(c)
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
		if !ok {
			return
		}
	}
	rel := &relay{s: s, id: c.id, every: progressEvery}
	req := dispatch.Request{
		Request: supervisor.Request{
			Plugin: c.req.GetPlugin(),
			Command: host.Command{
				ID:         c.id,
				Action:     c.req.GetAction(),
				Params:     c.req.GetParameters(),
				OnProgress: rel.progress,
			},
			Timeout: s.o.Timeout,
		},
		Expiry:  c.expiry,
		OnStart: func() error { return s.onStart(c) },
	}
	// The dispatcher keeps this deadline; the watchdog below needs it now.
	deadline := req.SetDeadline()
	done := make(chan outcome, 1)
	go func() {
		res, err := s.disp.Do(s.cmdCtx, req, rel.rows)
		c.returned()
		done <- outcome{res, err}
	}()
	watchdog := time.NewTimer(time.Until(deadline) + s.o.AnswerGrace)
	defer watchdog.Stop()
	select {
	case o := <-done:
		s.answer(c, rel, o.res, o.err)
	case <-watchdog.C:
		s.unanswered(c, rel, done)
	}
}

// outcome is what the dispatcher returned for a command.
type outcome struct {
	res sdk.Result
	err error
}

// unanswered answers a command whose dispatch has not returned AnswerGrace past its
// deadline: TIMEOUT with command_unanswered, and a goroutine dump in the log, since
// something on the path is stuck. Rows the command writes later are refused (which
// cancels its stream to the plugin), and its late outcome is only logged.
func (s *Session) unanswered(c *command, rel *relay, late <-chan outcome) {
	plugin := c.req.GetPlugin()
	s.log.Error("command unanswered past its deadline plus grace: the agent answers it itself", "id", shown(c.id),
		"plugin", shown(plugin), "timeout", supervisor.Seconds(s.o.Timeout), "grace", supervisor.Seconds(s.o.AnswerGrace), "stacks", stacks.Dump())
	s.failed(c, rel, agentv1.CommandResponse_TIMEOUT, "command_unanswered",
		fmt.Errorf("no answer from plugin %s within %s of the command's %s deadline", shown(plugin), supervisor.Seconds(s.o.AnswerGrace), supervisor.Seconds(s.o.Timeout)))
	go func() {
		o := <-late
		s.log.Warn("late outcome of a command already answered", "id", shown(c.id), "error", errText(o.err))
	}()
}

func errText(err error) string {
	if err == nil {
		return "none"
	}
	return rows.Printable(err.Error())
}

// sleep waits out the stagger and delay. A command that expires meanwhile is answered
// REJECTED as soon as it expires; one the agent stops for, REJECTED at once. It
// reports whether the command should go on.
func (s *Session) sleep(c *command) bool {
	wake := time.Now().Add(c.wait)
	expires := !c.expiry.IsZero() && c.expiry.Before(wake)
	d := c.wait
	if expires {
		d = max(time.Until(c.expiry), 0) + time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.cmdCtx.Done():
		s.finish(c, rejected(c.id, msgStopping))
		return false
	}
	if expires || c.expired(time.Now()) {
		s.finish(c, rejected(c.id, msgExpired))
		return false
	}
	return true
}

// answer turns the dispatcher's outcome into the command's last messages.
func (s *Session) answer(c *command, rel *relay, res sdk.Result, err error) {
	var waited *supervisor.WaitTimeoutError
	var unrecorded *journalError
	if !c.started.Load() {
		switch {
		case errors.Is(err, dispatch.ErrQueueFull):
			s.finish(c, rejected(c.id, err.Error()))
		case errors.As(err, &unrecorded):
			// Not run and not recorded: a repeat of the id may run once the journal
			// writes again.
			s.finish(c, rejected(c.id, shownLong(err.Error())))
		case errors.Is(err, dispatch.ErrExpired):
			s.finish(c, rejected(c.id, msgExpired))
		case s.cmdCtx.Err() != nil:
			s.finish(c, rejected(c.id, msgStopping))
		case errors.As(err, &waited):
			// It waited its whole deadline for a plugin slot.
			s.failed(c, rel, agentv1.CommandResponse_TIMEOUT, "command_timeout", err)
		default:
			s.failed(c, rel, agentv1.CommandResponse_FAILURE, "agent_dispatch_error", err)
		}
		return
	}
	var (
		to      *supervisor.TimeoutError
		crashed *supervisor.CrashedError
	)
	switch {
	case err == nil:
		_ = rel.end("")
		status := agentv1.CommandResponse_SUCCESS
		if res.Code != 0 {
			status = agentv1.CommandResponse_FAILURE
		}
		resp := &agentv1.CommandResponse{
			CommandId:          c.id,
			Status:             status,
			ExitCode:           int32(max(min(res.Code, 1<<31-1), -1<<31)),
			SentAt:             spool.Now(),
			PluginResultStatus: resultStatus(res.Status),
		}
		s.finish(c, resp)
	case errors.As(err, &to):
		s.failed(c, rel, agentv1.CommandResponse_TIMEOUT, "plugin_timeout", err)
	case errors.As(err, &waited):
		// Its deadline passed while the plugin was starting or waiting out a restart.
		s.failed(c, rel, agentv1.CommandResponse_TIMEOUT, "command_timeout", err)
	case errors.As(err, &crashed):
		s.failed(c, rel, agentv1.CommandResponse_FAILURE, "plugin_crashed", err)
	case errors.Is(err, context.Canceled) && s.cmdCtx.Err() != nil:
		s.failed(c, rel, agentv1.CommandResponse_FAILURE, "command_cancelled", errors.New(msgCancelled))
	default:
		s.failed(c, rel, agentv1.CommandResponse_FAILURE, "agent_dispatch_error", err)
	}
}

// resultStatus maps the plugin's typed status onto the wire enum (same numbers).
func resultStatus(st sdk.Status) agentv1.CommandResponse_PluginResultStatus {
	return agentv1.CommandResponse_PluginResultStatus(st.Known())
}

// failed ends a command the agent could not complete: its error row after the rows
// the plugin wrote, then the terminal answer with exit code 1 and the error detail.
func (s *Session) failed(c *command, rel *relay, status agentv1.CommandResponse_Status, code string, err error) {
	// The message may quote plugin or server text: escaped as exec prints it.
	msg := rows.Printable(err.Error())
	_ = rel.end(rows.Format("error", msg))
	s.finish(c, &agentv1.CommandResponse{
		CommandId: c.id,
		Status:    status,
		ExitCode:  1,
		Error:     &commonv1.ErrorDetail{Code: code, Message: truncate(msg, 1024)},
		SentAt:    spool.Now(),
	})
}

// finish sends the timing message of a command that ran, records and queues its
// terminal answer, and forgets the command. A terminal whose answer may miss rows (the
// spool could not keep them through a broken stream) becomes a FAILURE that says so.
func (s *Session) finish(c *command, resp *agentv1.CommandResponse) {
	ran := c.started.Load()
	inPlugin := c.inPlugin()
	if row, sealed := s.spool.Seal(resp, false); row != "" {
		s.log.Warn("answer may miss rows: the connection broke while more was in flight than the spool keeps", "id", shown(c.id))
		_ = s.out.Push(s.life, spool.Msg{Resp: spool.Running(c.id, row), Kind: spool.KindRows, Idx: s.spool.Rows(c.id, row)})
		resp = sealed
	}
	if ran {
		timing := spool.Running(c.id, timingPrefix+strconv.FormatInt(inPlugin.Milliseconds(), 10))
		s.spool.Timing(timing)
		_ = s.out.Push(s.life, spool.Msg{Resp: timing, Kind: spool.KindTiming})
		s.executedCnt.Add(1)
	} else {
		s.o.Metrics.QueueAdd(-1)
	}
	// Only an answer from a run settles a command for good; a refusal because the
	// agent was busy or stopping lets a repeat of the id run.
	s.settle(c.id, resp, ran)
	s.o.Metrics.Command(s.pluginLabel(c.req.GetPlugin()), statusLabel(resp.GetStatus()), inPlugin)
	s.log.Debug("command answered", "id", shown(c.id), "status", resp.GetStatus().String(), "exit_code", resp.GetExitCode())
	s.mu.Lock()
	delete(s.inflight, c.id)
	s.paramBytes -= c.bytes
	s.mu.Unlock()
}

func statusLabel(st agentv1.CommandResponse_Status) string {
	switch st {
	case agentv1.CommandResponse_SUCCESS:
		return "success"
	case agentv1.CommandResponse_FAILURE:
		return "failure"
	case agentv1.CommandResponse_TIMEOUT:
		return "timeout"
	case agentv1.CommandResponse_REJECTED:
		return "rejected"
	}
	return "running"
}

// relay collects a command's rows into RUNNING messages of at most maxOutput bytes,
// rows joined by "\n". Once the command's last rows are in (end), it refuses more.
type relay struct {
	s     *Session
	id    string
	every time.Duration // least time between two progress messages

	mu           sync.Mutex
	buf          []byte
	ended        bool
	progressLast time.Time
}

// errAnswered refuses the rows of a command that has been answered already.
var errAnswered = errors.New("the command has been answered already")

// rows adds a batch of the plugin's rows.
func (r *relay) rows(batch []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return errAnswered
	}
	return r.add(batch)
}

// progress sends a progress report as a RUNNING __progress__ message: at most one
// every r.every (later reports in that time are dropped; the next one after it goes),
// never once the command's last rows are in (so never after its terminal answer), and
// never at the cost of waiting: with the outbox full the report is dropped, as rows and
// answers matter more.
func (r *relay) progress(done, total uint64, unit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.ended || (!r.progressLast.IsZero() && now.Sub(r.progressLast) < r.every) {
		return
	}
	// The unit comes from the plugin: escaped and bounded like server text.
	msg := spool.Running(r.id, rows.Format(progressKind, "done="+strconv.FormatUint(done, 10),
		"total="+strconv.FormatUint(total, 10), "unit="+shown(unit)))
	if r.s.out.Offer(spool.Msg{Resp: msg, Kind: spool.KindProgress}) {
		r.progressLast = now
	}
}

// end adds the command's last row (none when empty), sends what is collected and
// refuses any later row.
func (r *relay) end(last string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if last != "" {
		if err := r.add([]string{last}); err != nil {
			return err
		}
	}
	return r.flush()
}

// add collects rows, sending a message whenever one is full; r.mu is held. A row
// goes to the server as exec prints it: control bytes escaped, valid UTF-8.
func (r *relay) add(batch []string) error {
	for _, row := range batch {
		row = rows.Printable(row)
		if len(r.buf) > 0 && len(r.buf)+1+len(row) > maxOutput {
			if err := r.flush(); err != nil {
				return err
			}
		}
		if len(r.buf) > 0 {
			r.buf = append(r.buf, '\n')
		}
		r.buf = append(r.buf, row...)
		if len(r.buf) >= maxOutput {
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush sends the collected rows, waiting while the outbox is full; r.mu is held.
func (r *relay) flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	msg := spool.Running(r.id, string(r.buf))
	r.buf = r.buf[:0]
	idx := r.s.spool.Rows(r.id, msg.Output)
	return r.s.out.Push(r.s.life, spool.Msg{Resp: msg, Kind: spool.KindRows, Idx: idx})
}
