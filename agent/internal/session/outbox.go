package session

import (
	"context"
	"sync"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
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
type outbox struct {
	limit int

	mu      sync.Mutex
	q       []outMsg
	head    int
	bytes   int
	changed chan struct{} // closed and replaced on every change
}

// outMsg is one message with what the spool must know of it once a stream has taken
// it.
type outMsg struct {
	resp *agentv1.CommandResponse
	// kind says what part of a command's answer the message is (kindLone: none).
	kind msgKind
	// idx is a kindRows message's index among its command's RUNNING messages.
	idx int
	// keep makes push queue the message even when its context ends while it waits
	// for room: the receiving goroutine must not wait for a stream that is gone, yet
	// its answer must not be lost. It adds at most one message per receiver.
	keep bool
	size int
}

func newOutbox(limit int) *outbox {
	return &outbox{limit: limit, changed: make(chan struct{})}
}

// signal wakes every waiter; o.mu is held.
func (o *outbox) signal() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// msgKind is what part of an answer a message is.
type msgKind uint8

const (
	kindLone     msgKind = iota // no part of an answer the spool keeps: a rejection, a replay, a notice
	kindRows                    // a RUNNING message of a command's rows
	kindTiming                  // the command's __timing__ message
	kindProgress                // a __progress__ message: stale once it left, never sent again
	kindTerminal                // the command's terminal answer, which never waits for room
)

// push appends a message. Unless it is terminal it waits while the outbox is over its
// limit (an empty outbox takes any message, however large); when ctx ends first, it
// fails, or for a keep message stops waiting and queues it all the same.
func (o *outbox) push(ctx context.Context, m outMsg) error {
	m.size = m.bytes()
	o.mu.Lock()
	for m.kind != kindTerminal && o.bytes > 0 && o.bytes+m.size > o.limit {
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			if !m.keep {
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
func (o *outbox) offer(m outMsg) bool {
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
func (m outMsg) bytes() int { return len(m.resp.GetOutput()) + len(m.resp.GetCommandId()) + 64 }

// append queues m; o.mu is held.
func (o *outbox) append(m outMsg) {
	o.q = append(o.q, m)
	o.bytes += m.size
	o.signal()
}

// peek returns the first message, waiting for one until ctx ends.
func (o *outbox) peek(ctx context.Context) (outMsg, error) {
	o.mu.Lock()
	for o.head == len(o.q) {
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return outMsg{}, ctx.Err()
		}
		o.mu.Lock()
	}
	m := o.q[o.head]
	o.mu.Unlock()
	return m, nil
}

// pop removes the first message, which peek returned and a stream has taken.
func (o *outbox) pop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.head == len(o.q) {
		return
	}
	o.bytes -= o.q[o.head].size
	o.q[o.head] = outMsg{}
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
func (o *outbox) waitEmpty(ctx context.Context) error {
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
func (o *outbox) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.q) - o.head
}
