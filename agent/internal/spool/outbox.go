package spool

import (
	"context"
	"sync"
	"time"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
)

// outbox is the one queue every message to the fleet server goes through, in order. It
// belongs to the agent, not to a connection: what a broken stream could not take waits
// here for the next one. A message leaves only once a stream has taken it, so the
// message a failed Send was holding is the first one the next stream sends.
//
// Its memory is bounded: a push waits while the queued bytes are over the limit,
// which slows a plugin's rows (and the reading of new commands) down to what the
// connection takes instead of piling up. Terminal answers never wait: their number is
// bounded by the commands in flight, and a command must be able to finish even while
// the server is away.
type Outbox struct {
	limit int

	mu      sync.Mutex
	q       []Msg
	head    int
	bytes   int
	changed chan struct{} // closed and replaced on every change
}

// Msg is one message with what the spool must know of it once a stream has taken
// it.
type Msg struct {
	Resp *agentv1.CommandResponse
	// kind says what part of a command's answer the message is (KindLone: none).
	Kind Kind
	// idx is a KindRows message's index among its command's RUNNING messages.
	Idx int
	// keep makes push queue the message even when its context ends while it waits
	// for room: the receiving goroutine must not wait for a stream that is gone, yet
	// its answer must not be lost. It adds at most one message per receiver.
	Keep bool
	size int
}

func NewOutbox(limit int) *Outbox {
	return &Outbox{limit: limit, changed: make(chan struct{})}
}

// signal wakes every waiter; o.mu is held.
func (o *Outbox) signal() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// Kind is what part of an answer a message is.
type Kind uint8

const (
	KindLone     Kind = iota // no part of an answer the spool keeps: a rejection, a replay, a notice
	KindRows                 // a RUNNING message of a command's rows
	KindTiming               // the command's __timing__ message
	KindProgress             // a __progress__ message: stale once it left, never sent again
	KindTerminal             // the command's terminal answer, which never waits for room
)

// push appends a message. Unless it is terminal it waits while the outbox is over its
// limit (an empty outbox takes any message, however large); when ctx ends first, it
// fails, or for a keep message stops waiting and queues it all the same.
func (o *Outbox) Push(ctx context.Context, m Msg) error {
	m.size = m.bytes()
	o.mu.Lock()
	for m.Kind != KindTerminal && o.bytes > 0 && o.bytes+m.size > o.limit {
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			if !m.Keep {
				return ctx.Err()
			}
			o.mu.Lock()
			o.append(m)
			o.mu.Unlock()
			return nil
		}
		o.mu.Lock()
	}
	o.append(m)
	o.mu.Unlock()
	return nil
}

// offer appends m only if it fits under the limit now (an empty outbox takes it), and
// reports whether it did. It never waits.
func (o *Outbox) Offer(m Msg) bool {
	m.size = m.bytes()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bytes > 0 && o.bytes+m.size > o.limit {
		return false
	}
	o.append(m)
	return true
}

// bytes is what m counts against the outbox's limit.
func (m Msg) bytes() int { return len(m.Resp.GetOutput()) + len(m.Resp.GetCommandId()) + 64 }

// append queues m; o.mu is held.
func (o *Outbox) append(m Msg) {
	o.q = append(o.q, m)
	o.bytes += m.size
	o.signal()
}

// peek returns the first message, waiting for one until ctx ends.
func (o *Outbox) Peek(ctx context.Context) (Msg, error) {
	o.mu.Lock()
	for o.head == len(o.q) {
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Msg{}, ctx.Err()
		}
		o.mu.Lock()
	}
	m := o.q[o.head]
	o.mu.Unlock()
	return m, nil
}

// pop removes the first message, which peek returned and a stream has taken.
func (o *Outbox) Pop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.head == len(o.q) {
		return
	}
	o.bytes -= o.q[o.head].size
	o.q[o.head] = Msg{}
	o.head++
	// Reuse the slice once it is drained, or compact it once the dead head is large.
	if o.head == len(o.q) {
		o.q, o.head = o.q[:0], 0
	} else if o.head > 1024 && o.head*2 > len(o.q) {
		n := copy(o.q, o.q[o.head:])
		clear(o.q[n:])
		o.q, o.head = o.q[:n], 0
	}
	o.signal()
}

// waitEmpty returns once every message has left, or when ctx ends.
func (o *Outbox) WaitEmpty(ctx context.Context) error {
	o.mu.Lock()
	for o.head < len(o.q) {
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		o.mu.Lock()
	}
	o.mu.Unlock()
	return nil
}

// len returns how many messages wait.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.q) - o.head
}

// Now is the time stamp of a message made now.
func Now() *commonv1.Timestamp { return &commonv1.Timestamp{MillisEpoch: time.Now().UnixMilli()} }

// Running is a RUNNING message carrying output for command id.
func Running(id, output string) *agentv1.CommandResponse {
	return &agentv1.CommandResponse{CommandId: id, Status: agentv1.CommandResponse_RUNNING, Output: output}
}
