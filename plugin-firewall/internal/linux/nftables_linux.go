package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// nftMaxObjects caps how many tables, chains or rules one read accepts. The library
// decodes whole replies into memory, so this is the bound on what a huge ruleset can
// cost; a read over it reports "oversized" instead of growing further.
const nftMaxObjects = 1 << 16

// nftReader reads the ruleset through github.com/google/nftables, read-only, in three
// requests (tables, chains, then the rules of every chain), each on one fresh netlink
// socket that lasts for the whole request.
//
// Each request is bounded by a socket deadline set from the library's socket-option
// hook, which runs right after the socket is opened and before anything is sent; the
// netlink socket is a pollable descriptor, so a send or receive that would wait past
// the deadline returns an i/o timeout instead of blocking. The deadline stays on the
// socket, so it bounds every message of a request, however many it sends. Cancelling
// ctx moves the deadline to the past, which ends a request in flight the same way.
type nftReader struct {
	// opts are extra connection options (a network namespace or a test dialer).
	opts []nftables.ConnOption
	// tableBy, chainBy and ruleBy are the cumulative cut-offs.
	tableBy, chainBy, ruleBy time.Duration
	// maxObjects caps each dump.
	maxObjects int
	// setDeadline bounds one socket; tests replace it for dialers without deadlines.
	setDeadline func(c *netlink.Conn, t time.Time) error
	now         func() time.Time
}

func newNftReader(opts ...nftables.ConnOption) *nftReader {
	return &nftReader{
		opts:        opts,
		tableBy:     NftTableBy,
		chainBy:     NftChainBy,
		ruleBy:      NftRuleBy,
		maxObjects:  nftMaxObjects,
		setDeadline: func(c *netlink.Conn, t time.Time) error { return c.SetDeadline(t) },
		now:         time.Now,
	}
}

// errOversized marks a dump that went over maxObjects.
var errOversized = errors.New("nftables: dump over the object cap")

// outcome is how one dump ended.
type outcome struct {
	// opened is false when the socket could not even be opened.
	opened bool
	err    error
	// reason is the token for err, "ok" when err is nil.
	reason string
}

// Read runs the table, chain and rule dumps and decides whether nftables answers.
func (r *nftReader) Read(ctx context.Context) NftResult {
	var res NftResult
	start := r.now()

	var tables []*nftables.Table
	out := r.request(ctx, start.Add(r.tableBy), func(c *nftables.Conn) error {
		var err error
		tables, err = c.ListTablesOfFamily(nftables.TableFamilyUnspecified)
		if err == nil && len(tables) > r.maxObjects {
			err = errOversized
		}
		return err
	})
	if !out.opened {
		// No socket at all. A kernel without nftables has nothing to read; any other
		// cause leaves the kernel's rules unknown, and says why.
		switch rw, ok := socketRow(out.err); {
		case ok:
			res.Diag = append(res.Diag, rw)
		case noNftables(out.err):
			res.Absent = true
		default:
			res.Diag = append(res.Diag, parse.NftDiagRow(parse.DumpSocket, parse.ReasonIOError))
		}
		return res
	}
	if out.reason != parse.ReasonOK {
		res.Diag = append(res.Diag, parse.NftDiagRow(parse.DumpTable, out.reason))
		return res
	}
	named := 0
	for _, t := range tables {
		if t.Name != "" {
			named++
		}
	}
	seen := named > 0

	// Chains, then the rules of each chain. The library asks for rules one chain at a
	// time (its rule request always names a table and chain); those questions share
	// one socket, bounded by the rule cut-off, so a host with hundreds of chains does
	// not open hundreds of sockets.
	var chains []*nftables.Chain
	out = r.request(ctx, start.Add(r.chainBy), func(c *nftables.Conn) error {
		var err error
		chains, err = c.ListChainsOfTableFamily(nftables.TableFamilyUnspecified)
		if err == nil && len(chains) > r.maxObjects {
			err = errOversized
		}
		return err
	})
	if out.reason != parse.ReasonOK {
		return handOff(res, seen, parse.DumpChain, out)
	}
	for _, c := range chains {
		if c.Name == "" {
			continue
		}
		res.Chains = append(res.Chains, chainOf(c))
	}

	// A chain the kernel sent without its table cannot be addressed by a rule
	// request; there is nothing to ask for. With nothing to ask, no socket is opened.
	var ask []*nftables.Chain
	for _, c := range chains {
		if c.Name != "" && c.Table != nil {
			ask = append(ask, c)
		}
	}
	if len(ask) > 0 {
		ruleDeadline := start.Add(r.ruleBy)
		var rules []NftRule
		out = r.request(ctx, ruleDeadline, func(conn *nftables.Conn) error {
			for _, c := range ask {
				// The checks request makes before it opens the socket, made again
				// before every chain: once the command has ended or the cut-off
				// has passed, nothing more is asked.
				if err := ctx.Err(); err != nil {
					return err
				}
				if !r.now().Before(ruleDeadline) {
					return os.ErrDeadlineExceeded
				}
				got, err := conn.GetRules(c.Table, c)
				if err != nil {
					return err
				}
				if len(rules)+len(got) > r.maxObjects {
					return errOversized
				}
				for _, rl := range got {
					rules = append(rules, ruleOf(c, rl))
				}
			}
			return nil
		})
		if out.reason != parse.ReasonOK {
			return handOff(res, seen, parse.DumpRule, out)
		}
		res.Rules = rules
	}

	res.Answered, res.Tables = true, named
	return res
}

// handOff records a failed chain or rule dump: the rows naming it, whether tables were
// seen, and what the closing row needs if no later backend answers.
func handOff(res NftResult, seen bool, dump string, out outcome) NftResult {
	if !out.opened {
		// The socket-open rows an operator can act on are written here too; the
		// dump itself counts as an I/O failure.
		if rw, ok := socketRow(out.err); ok {
			res.Diag = append(res.Diag, rw)
		}
		out.reason = parse.ReasonIOError
	}
	res.Diag = append(res.Diag, parse.NftFallthroughRow(dump, out.reason))
	res.TablesSeen = seen
	res.FailedDump, res.FailedReason = dump, out.reason
	res.Chains, res.Rules = nil, nil
	return res
}

// request runs fn on a connection whose one socket is bounded by deadline, and turns
// its error into a reason token. The socket is opened before fn runs (the library's
// lasting mode; without it every call fn makes would open a socket of its own) and
// closed when fn returns. A panic inside the library's decoders (it trusts the
// lengths in what the kernel sends) is caught here and reported as an I/O failure
// instead of taking the plugin down.
//
// fn may ask several questions on the socket, but must stop at its first failure: a
// failed dump can leave the rest of its answer queued on the socket, where the next
// question would read it.
func (r *nftReader) request(ctx context.Context, deadline time.Time, fn func(*nftables.Conn) error) (out outcome) {
	if err := ctx.Err(); err != nil {
		return outcome{opened: true, err: err, reason: parse.ReasonTimeout}
	}
	if !r.now().Before(deadline) {
		return outcome{opened: true, err: os.ErrDeadlineExceeded, reason: parse.ReasonTimeout}
	}
	stop := func() bool { return false }
	bound := nftables.WithSockOptions(func(c *netlink.Conn) error {
		out.opened = true
		if err := r.setDeadline(c, deadline); err != nil {
			// The library drops a connection whose option failed without closing
			// it, so it is closed here.
			_ = c.Close()
			return fmt.Errorf("nftables: bound socket: %w", err)
		}
		stop = context.AfterFunc(ctx, func() { _ = r.setDeadline(c, time.Unix(1, 0)) })
		return nil
	})
	var conn *nftables.Conn
	defer func() {
		stop()
		if conn != nil {
			_ = conn.CloseLasting()
		}
	}()
	opts := append(append([]nftables.ConnOption(nil), r.opts...), bound, nftables.AsLasting())
	conn, err := nftables.New(opts...)
	if err != nil {
		// The socket could not be opened (opened stays false) or could not be
		// bounded (the hook set opened and closed it); either way the error is
		// mapped like any other, as when the library opened the socket inside fn.
		out.err = err
		out.reason = reasonOf(err, deadline, r.now())
		return out
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("nftables: malformed reply: %v", p)
			}
		}()
		err = fn(conn)
	}()
	out.err = err
	out.reason = reasonOf(err, deadline, r.now())
	return out
}

// socketRow is the row for a socket that could not be opened, when the cause is one
// an operator can act on: running out of descriptors, or being refused the socket.
func socketRow(err error) (rows.Row, bool) {
	switch {
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		return rows.New("error", "fd_exhausted"), true
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return parse.NftDiagRow(parse.DumpSocket, parse.ReasonEPERM), true
	default:
		return rows.Row{}, false
	}
}

// noNftables reports whether a socket failure means the kernel has no nftables
// netlink protocol at all: not a failure to read, but nothing to read.
func noNftables(err error) bool {
	return errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.EAFNOSUPPORT)
}

// Text of the errors the library only hands back as strings. GetRules formats its
// receive error with %v, which drops the error chain, so the kernel's answer has to be
// read back from the text; the tests run these paths through the library itself so a
// change of wording there shows up as a failing test here.
const (
	rulesRecvPrefix  = "receiveAckAware: netlink receive: "
	rulesSendPrefix  = "SendMessages: netlink send-messages: "
	shortErrorText   = "not enough data for netlink error code"
	timeoutErrorText = "i/o timeout"
)

// reasonOf maps a dump error onto the reason tokens.
//
// Which tokens this reader can produce, given what the library exposes:
//   - ok, timeout (the socket deadline, or any failure at or after the cut-off);
//   - eperm and errno:<n> (an error number the kernel sent in a netlink error
//     message, told apart from a failing system call by the library's error type);
//   - errno:undecoded (a netlink error message too short to hold a number);
//   - oversized (over nftMaxObjects);
//   - io_error (a failed system call, a reply the library could not decode or
//     validate, or a socket that could not be opened or bounded).
//
// foreign_flood, truncated and torn cannot occur here: the library reads every
// datagram whole (it sizes its buffer by peeking first), does not expose the sender
// address, and drops the NLM_F_DUMP_INTR flag along with the message headers.
func reasonOf(err error, deadline, now time.Time) string {
	switch {
	case err == nil:
		return parse.ReasonOK
	case errors.Is(err, errOversized):
		return parse.ReasonOversized
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled), !now.Before(deadline):
		return parse.ReasonTimeout
	}
	var op *netlink.OpError
	if errors.As(err, &op) {
		var sys *os.SyscallError
		var errno unix.Errno
		switch {
		case errors.As(op.Err, &sys):
			return parse.ReasonIOError
		case errors.As(op.Err, &errno):
			// Not wrapped as a system call: the number came from a netlink error
			// message, that is, from the kernel's answer to the dump.
			return parse.ErrnoReason(int(errno))
		case op.Err != nil && op.Err.Error() == shortErrorText:
			return parse.ReasonErrnoUndecoded
		}
		return parse.ReasonIOError
	}
	text := err.Error()
	if rest, ok := strings.CutPrefix(text, rulesSendPrefix); ok && rest == timeoutErrorText {
		return parse.ReasonTimeout
	}
	if rest, ok := strings.CutPrefix(text, rulesRecvPrefix); ok {
		switch rest {
		case timeoutErrorText:
			return parse.ReasonTimeout
		case shortErrorText:
			return parse.ReasonErrnoUndecoded
		}
		// Only a receive can carry the kernel's answer; a failed send is the
		// system call's own failure.
		if n, ok := errnoFromText(rest); ok {
			return parse.ErrnoReason(n)
		}
	}
	return parse.ReasonIOError
}

// errnoFromText finds the error number whose message is exactly text. A failed system
// call reads "recvmsg: <message>", so it never matches and stays an I/O failure.
func errnoFromText(text string) (int, bool) {
	for n := 1; n < 256; n++ {
		if unix.Errno(n).Error() == text {
			return n, true
		}
	}
	return 0, false
}

func chainOf(c *nftables.Chain) NftChain {
	ch := NftChain{Name: c.Name}
	if c.Table != nil {
		ch.Family, ch.Table = uint32(c.Table.Family), c.Table.Name
	}
	if c.Hooknum != nil {
		ch.Base, ch.Hook = true, uint32(*c.Hooknum)
	}
	if c.Policy != nil {
		ch.HasPolicy, ch.Policy = true, uint32(*c.Policy)
	}
	return ch
}

// ruleOf flattens a rule. The kernel numbers rule handles from 1, so a zero handle
// means the reply carried none.
func ruleOf(c *nftables.Chain, r *nftables.Rule) NftRule {
	nr := NftRule{Family: uint32(c.Table.Family), Handle: r.Handle, HasHandle: r.Handle != 0}
	if r.Table != nil {
		nr.Table = r.Table.Name
	}
	if r.Chain != nil {
		nr.Chain = r.Chain.Name
	}
	return nr
}
