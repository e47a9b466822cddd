package linux

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"golang.org/x/sys/unix"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// The tests below feed hand-built kernel replies to the real library through its test
// dialer, so what is tested is the library's decoding plus this package's mapping,
// not a model of either.

const nlaNested = 0x8000

func msgType(msg int) netlink.HeaderType {
	return netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | msg)
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
func cstr(s string) []byte { return append([]byte(s), 0) }

func marshal(t testing.TB, attrs ...netlink.Attribute) []byte {
	t.Helper()
	b, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nfgen is the 4-byte nfgenmsg header: family, version, resource id.
func nfgen(family byte) []byte { return []byte{family, 0, 0, 0} }

func tableMsg(t testing.TB, family byte, name string) netlink.Message {
	return netlink.Message{
		Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWTABLE)},
		Data:   append(nfgen(family), marshal(t, netlink.Attribute{Type: unix.NFTA_TABLE_NAME, Data: cstr(name)})...),
	}
}

type chainSpec struct {
	family       byte
	table, name  string
	hook, policy *uint32
}

func u32(v uint32) *uint32 { return &v }

func chainMsg(t testing.TB, c chainSpec) netlink.Message {
	attrs := []netlink.Attribute{
		{Type: unix.NFTA_CHAIN_TABLE, Data: cstr(c.table)},
		{Type: unix.NFTA_CHAIN_NAME, Data: cstr(c.name)},
	}
	if c.hook != nil {
		hook := marshal(t,
			netlink.Attribute{Type: unix.NFTA_HOOK_HOOKNUM, Data: be32(*c.hook)},
			netlink.Attribute{Type: unix.NFTA_HOOK_PRIORITY, Data: be32(0)})
		attrs = append(attrs, netlink.Attribute{Type: unix.NFTA_CHAIN_HOOK | nlaNested, Data: hook})
	}
	if c.policy != nil {
		attrs = append(attrs, netlink.Attribute{Type: unix.NFTA_CHAIN_POLICY, Data: be32(*c.policy)})
	}
	return netlink.Message{
		Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWCHAIN)},
		Data:   append(nfgen(c.family), marshal(t, attrs...)...),
	}
}

func ruleMsg(t testing.TB, family byte, table, chain string, handle uint64) netlink.Message {
	return netlink.Message{
		Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWRULE)},
		Data: append(nfgen(family), marshal(t,
			netlink.Attribute{Type: unix.NFTA_RULE_TABLE, Data: cstr(table)},
			netlink.Attribute{Type: unix.NFTA_RULE_CHAIN, Data: cstr(chain)},
			netlink.Attribute{Type: unix.NFTA_RULE_HANDLE, Data: be64(handle)})...),
	}
}

// fakeKernel answers the three dump requests. A reply function returning an error
// makes the dump fail that way; rules are answered per requested table and chain.
type fakeKernel struct {
	tables func(req netlink.Message) ([]netlink.Message, error)
	chains func(req netlink.Message) ([]netlink.Message, error)
	rules  func(req netlink.Message, table, chain string) ([]netlink.Message, error)
	// ruleRequests counts rule requests, one per chain.
	ruleRequests int
}

func (k *fakeKernel) dial(t testing.TB) nltest.Func {
	return func(reqs []netlink.Message) ([]netlink.Message, error) {
		if len(reqs) == 0 {
			return nil, io.EOF
		}
		req := reqs[0]
		var replies []netlink.Message
		var err error
		switch req.Header.Type {
		case msgType(unix.NFT_MSG_GETTABLE):
			replies, err = k.tables(req)
		case msgType(unix.NFT_MSG_GETCHAIN):
			replies, err = k.chains(req)
		case msgType(unix.NFT_MSG_GETRULE):
			k.ruleRequests++
			var table, chain string
			ad, derr := netlink.NewAttributeDecoder(req.Data[4:])
			if derr != nil {
				t.Errorf("rule request: %v", derr)
				return nil, derr
			}
			for ad.Next() {
				switch ad.Type() {
				case unix.NFTA_RULE_TABLE:
					table = ad.String()
				case unix.NFTA_RULE_CHAIN:
					chain = ad.String()
				}
			}
			replies, err = k.rules(req, table, chain)
		default:
			t.Errorf("unexpected request type %#x", req.Header.Type)
			return nltest.Error(int(unix.EOPNOTSUPP), reqs)
		}
		if err != nil {
			return nil, err
		}
		return dumpReply(req, replies), nil
	}
}

// dumpReply frames replies as a multi-part dump answer to req, ended by DONE.
func dumpReply(req netlink.Message, replies []netlink.Message) []netlink.Message {
	out := make([]netlink.Message, 0, len(replies)+1)
	for _, m := range replies {
		if m.Header.Type != netlink.Error {
			m.Header.Flags |= netlink.Multi
		}
		if m.Header.Sequence == 0 {
			m.Header.Sequence = req.Header.Sequence
		}
		m.Header.PID = req.Header.PID
		out = append(out, m)
	}
	return append(out, netlink.Message{
		Header: netlink.Header{Type: netlink.Done, Flags: netlink.Multi, Sequence: req.Header.Sequence, PID: req.Header.PID},
		Data:   []byte{0, 0, 0, 0},
	})
}

func replies(m ...netlink.Message) func(netlink.Message) ([]netlink.Message, error) {
	return func(netlink.Message) ([]netlink.Message, error) { return m, nil }
}

// kernelErr answers a request with a netlink error message carrying errno.
func kernelErr(errno unix.Errno) func(netlink.Message) ([]netlink.Message, error) {
	return func(req netlink.Message) ([]netlink.Message, error) {
		msgs, _ := nltest.Error(int(errno), []netlink.Message{req})
		// The kernel's error message carries no flags; the helper copies the
		// request's, whose dump bit would read as "extended ack follows".
		msgs[0].Header.Flags = 0
		return msgs, nil
	}
}

// testReader returns a reader bound to the fake kernel, with the socket deadline
// replaced (the test dialer has no socket to bound).
func testReader(t testing.TB, k *fakeKernel) *nftReader {
	r := newNftReader(nftables.WithTestDial(k.dial(t)))
	r.setDeadline = func(*netlink.Conn, time.Time) error { return nil }
	return r
}

// sampleKernel holds the ruleset used by several tests: inet filter with a base chain
// INPUT (hook input, policy drop) and a regular chain, and ip nat with an accept
// base chain; rules in INPUT and custom-jump.
func sampleKernel(t testing.TB) *fakeKernel {
	return &fakeKernel{
		tables: replies(tableMsg(t, unix.NFPROTO_INET, "filter"), tableMsg(t, unix.NFPROTO_IPV4, "nat")),
		chains: replies(
			chainMsg(t, chainSpec{unix.NFPROTO_INET, "filter", "INPUT", u32(1), u32(0)}),
			chainMsg(t, chainSpec{unix.NFPROTO_INET, "filter", "custom-jump", nil, nil}),
			chainMsg(t, chainSpec{unix.NFPROTO_IPV4, "nat", "POSTROUTING", u32(4), u32(1)}),
		),
		rules: func(req netlink.Message, table, chain string) ([]netlink.Message, error) {
			switch table + "/" + chain {
			case "filter/INPUT":
				return []netlink.Message{ruleMsg(t, req.Data[0], table, chain, 42), ruleMsg(t, req.Data[0], table, chain, 43)}, nil
			case "filter/custom-jump":
				return []netlink.Message{ruleMsg(t, req.Data[0], table, chain, 7)}, nil
			}
			return nil, nil
		},
	}
}

func TestNftReaderAnswers(t *testing.T) {
	k := sampleKernel(t)
	res := testReader(t, k).Read(context.Background())
	if !res.Answered || len(res.Diag) != 0 || res.TablesSeen || res.Tables != 2 {
		t.Fatalf("result %+v", res)
	}
	wantChains := []NftChain{
		{Family: 1, Table: "filter", Name: "INPUT", Base: true, Hook: 1, HasPolicy: true, Policy: 0},
		{Family: 1, Table: "filter", Name: "custom-jump"},
		{Family: 2, Table: "nat", Name: "POSTROUTING", Base: true, Hook: 4, HasPolicy: true, Policy: 1},
	}
	if !slices.Equal(res.Chains, wantChains) {
		t.Errorf("chains %+v\nwant %+v", res.Chains, wantChains)
	}
	wantRules := []NftRule{
		{Family: 1, Table: "filter", Chain: "INPUT", Handle: 42, HasHandle: true},
		{Family: 1, Table: "filter", Chain: "INPUT", Handle: 43, HasHandle: true},
		{Family: 1, Table: "filter", Chain: "custom-jump", Handle: 7, HasHandle: true},
	}
	if !slices.Equal(res.Rules, wantRules) {
		t.Errorf("rules %+v\nwant %+v", res.Rules, wantRules)
	}
	if k.ruleRequests != 3 {
		t.Errorf("%d rule requests, want one per chain (3)", k.ruleRequests)
	}
	rowsEqual(t, "rules rows", nftOnlyRows(res, true),
		"backend|nftables",
		"rule|nftables|inet|filter|INPUT|input|drop",
		"rule|nftables|ip|nat|POSTROUTING|postrouting|accept",
		"rule|nftables|inet|filter|INPUT|handle|42",
		"rule|nftables|inet|filter|INPUT|handle|43",
		"rule|nftables|inet|filter|custom-jump|handle|7",
		"ruleset|3")
	rowsEqual(t, "state rows", nftOnlyRows(res, false), "backend|nftables", "state|active", "ruleset|3")
}

func TestNftReaderEmptyAndNameless(t *testing.T) {
	k := &fakeKernel{tables: replies(), chains: replies(), rules: nil}
	res := testReader(t, k).Read(context.Background())
	if !res.Answered || res.Tables != 0 || len(res.Chains) != 0 || len(res.Rules) != 0 || len(res.Diag) != 0 {
		t.Fatalf("empty ruleset: %+v", res)
	}
	rowsEqual(t, "empty", nftOnlyRows(res, false), "backend|nftables", "state|inactive", "ruleset|0")

	// Tables and chains without a name are dropped; a rule without table or chain
	// names is still counted.
	k = &fakeKernel{
		tables: replies(tableMsg(t, 2, "")),
		chains: replies(chainMsg(t, chainSpec{2, "t", "", u32(1), u32(0)}), chainMsg(t, chainSpec{2, "t", "c", nil, nil})),
		rules: func(req netlink.Message, table, chain string) ([]netlink.Message, error) {
			return []netlink.Message{{
				Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWRULE)},
				Data:   nfgen(2),
			}}, nil
		},
	}
	res = testReader(t, k).Read(context.Background())
	if !res.Answered || res.Tables != 0 || len(res.Chains) != 1 || res.Chains[0].Name != "c" {
		t.Fatalf("nameless: %+v", res)
	}
	rowsEqual(t, "nameless rule", nftOnlyRows(res, true),
		"backend|nftables", "rule|nftables|ip|||handle|unknown", "ruleset|1")
}

func TestNftReaderFailures(t *testing.T) {
	okTables := func(t *testing.T) func(netlink.Message) ([]netlink.Message, error) {
		return replies(tableMsg(t, 1, "filter"))
	}
	short := func(req netlink.Message) ([]netlink.Message, error) {
		return []netlink.Message{{Header: netlink.Header{Type: netlink.Error}, Data: []byte{1, 2}}}, nil
	}
	deadline := func(netlink.Message) ([]netlink.Message, error) { return nil, os.ErrDeadlineExceeded }
	sysErr := func(netlink.Message) ([]netlink.Message, error) { return nil, unix.ENOBUFS }
	malformed := func(netlink.Message) ([]netlink.Message, error) {
		// Shorter than the nfgenmsg header the library indexes past.
		return []netlink.Message{{Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWTABLE)}, Data: []byte{2}}}, nil
	}
	badPolicy := func(netlink.Message) ([]netlink.Message, error) {
		// A policy attribute two bytes long, which the library reads as four.
		return []netlink.Message{{Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWCHAIN)},
			Data: append(nfgen(1), marshal(t, netlink.Attribute{Type: unix.NFTA_CHAIN_POLICY, Data: []byte{0, 1}})...)}}, nil
	}
	wrongSeq := func(req netlink.Message) ([]netlink.Message, error) {
		m := tableMsg(t, 1, "x")
		m.Header.Sequence = req.Header.Sequence + 100
		return []netlink.Message{m}, nil
	}
	overrun := func(netlink.Message) ([]netlink.Message, error) {
		// A name attribute that claims 100 bytes in a shorter message.
		data := append(nfgen(1), 100, 0, unix.NFTA_TABLE_NAME, 0, 'x', 0, 0, 0)
		return []netlink.Message{{Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWTABLE)}, Data: data}}, nil
	}
	oneChain := func(t *testing.T) func(netlink.Message) ([]netlink.Message, error) {
		return replies(chainMsg(t, chainSpec{1, "filter", "INPUT", u32(1), u32(1)}))
	}

	tests := []struct {
		name     string
		kernel   func(t *testing.T) *fakeKernel
		diag     []string
		seen     bool
		answered bool
	}{
		{"table eperm", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: kernelErr(unix.EPERM)}
		}, []string{"error|nftables:table:eperm"}, false, false},
		{"table errno", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: kernelErr(unix.EINVAL)}
		}, []string{"error|nftables:table:errno:22"}, false, false},
		{"table short error", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: short}
		}, []string{"error|nftables:table:errno:undecoded"}, false, false},
		{"table timeout", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: deadline}
		}, []string{"error|nftables:table:timeout"}, false, false},
		{"table syscall failure", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: sysErr}
		}, []string{"error|nftables:table:io_error"}, false, false},
		{"table malformed", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: malformed}
		}, []string{"error|nftables:table:io_error"}, false, false},
		{"table wrong sequence", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: wrongSeq}
		}, []string{"error|nftables:table:io_error"}, false, false},
		{"table attribute overrun", func(t *testing.T) *fakeKernel {
			// The library drops the bad attribute; the table has no name and is
			// dropped, and the empty ruleset answers.
			return &fakeKernel{tables: overrun, chains: replies()}
		}, nil, false, true},
		{"chain eperm", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: okTables(t), chains: kernelErr(unix.EPERM)}
		}, []string{"fallthrough|nftables:chain:eperm"}, true, false},
		{"chain timeout, no tables", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: replies(), chains: deadline}
		}, []string{"fallthrough|nftables:chain:timeout"}, false, false},
		{"chain malformed", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: okTables(t), chains: badPolicy}
		}, []string{"fallthrough|nftables:chain:io_error"}, true, false},
		{"rule eperm", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: okTables(t), chains: oneChain(t),
				rules: func(req netlink.Message, _, _ string) ([]netlink.Message, error) { return kernelErr(unix.EPERM)(req) }}
		}, []string{"fallthrough|nftables:rule:eperm"}, true, false},
		{"rule errno", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: okTables(t), chains: oneChain(t),
				rules: func(req netlink.Message, _, _ string) ([]netlink.Message, error) { return kernelErr(unix.ENOENT)(req) }}
		}, []string{"fallthrough|nftables:rule:errno:2"}, true, false},
		{"rule short error", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: okTables(t), chains: oneChain(t),
				rules: func(req netlink.Message, _, _ string) ([]netlink.Message, error) { return short(req) }}
		}, []string{"fallthrough|nftables:rule:errno:undecoded"}, true, false},
		{"rule timeout", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: okTables(t), chains: oneChain(t),
				rules: func(req netlink.Message, _, _ string) ([]netlink.Message, error) { return deadline(req) }}
		}, []string{"fallthrough|nftables:rule:timeout"}, true, false},
		{"rule syscall failure", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: okTables(t), chains: oneChain(t),
				rules: func(req netlink.Message, _, _ string) ([]netlink.Message, error) { return sysErr(req) }}
		}, []string{"fallthrough|nftables:rule:io_error"}, true, false},
		{"rule malformed", func(t *testing.T) *fakeKernel {
			return &fakeKernel{tables: okTables(t), chains: oneChain(t),
				rules: func(netlink.Message, string, string) ([]netlink.Message, error) {
					return []netlink.Message{{Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWRULE)}, Data: []byte{1}}}, nil
				}}
		}, []string{"fallthrough|nftables:rule:io_error"}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := testReader(t, tt.kernel(t)).Read(context.Background())
			if g := rows.Texts(res.Diag); !slices.Equal(g, tt.diag) {
				t.Errorf("diag %q, want %q", g, tt.diag)
			}
			if res.TablesSeen != tt.seen || res.Answered != tt.answered {
				t.Errorf("seen=%v answered=%v, want %v %v", res.TablesSeen, res.Answered, tt.seen, tt.answered)
			}
			if !tt.answered && (len(res.Chains) != 0 || len(res.Rules) != 0) {
				t.Errorf("a failed read kept objects: %+v", res)
			}
		})
	}
}

func TestNftReaderRuleDumpFailsPartWay(t *testing.T) {
	k := sampleKernel(t)
	inner := k.rules
	k.rules = func(req netlink.Message, table, chain string) ([]netlink.Message, error) {
		if chain == "custom-jump" {
			return kernelErr(unix.EBUSY)(req)
		}
		return inner(req, table, chain)
	}
	res := testReader(t, k).Read(context.Background())
	rowsEqual(t, "diag", res.Diag, "fallthrough|nftables:rule:errno:16")
	if res.Answered || !res.TablesSeen || res.FailedDump != parse.DumpRule || res.FailedReason != "errno:16" {
		t.Errorf("result %+v", res)
	}
	if len(res.Rules) != 0 {
		t.Errorf("rules of the first chain were kept from an incomplete read: %+v", res.Rules)
	}
	if k.ruleRequests != 2 {
		t.Errorf("%d rule requests, want to stop at the failing second one", k.ruleRequests)
	}
	rowsEqual(t, "terminal", nftOnlyRows(res, false),
		"backend|nftables", "state|unknown", "error|nftables:rule:errno:16", "ruleset|unknown")
}

func TestNftReaderOversized(t *testing.T) {
	r := testReader(t, sampleKernel(t))
	r.maxObjects = 1
	rowsEqual(t, "tables", r.Read(context.Background()).Diag, "error|nftables:table:oversized")

	r = testReader(t, sampleKernel(t))
	r.maxObjects = 2 // 2 tables fit, 3 chains do not
	rowsEqual(t, "chains", r.Read(context.Background()).Diag, "fallthrough|nftables:chain:oversized")

	r = testReader(t, sampleKernel(t))
	r.maxObjects = 3 // tables and chains fit; 2 + 1 rules reach 3, fine
	if res := r.Read(context.Background()); !res.Answered {
		t.Errorf("3 rules with a cap of 3: %+v", res)
	}
	k := sampleKernel(t)
	k.rules = func(req netlink.Message, table, chain string) ([]netlink.Message, error) {
		return []netlink.Message{ruleMsg(t, 1, table, chain, 1), ruleMsg(t, 1, table, chain, 2)}, nil
	}
	r = testReader(t, k)
	r.maxObjects = 3 // 2 rules in the first chain, 4 after the second
	rowsEqual(t, "rules", r.Read(context.Background()).Diag, "fallthrough|nftables:rule:oversized")
}

func TestNftReaderDeadlines(t *testing.T) {
	start := time.Unix(1000, 0)
	var got []time.Duration
	r := testReader(t, sampleKernel(t))
	r.now = func() time.Time { return start }
	r.setDeadline = func(_ *netlink.Conn, d time.Time) error {
		got = append(got, d.Sub(start))
		return nil
	}
	if res := r.Read(context.Background()); !res.Answered {
		t.Fatalf("result %+v", res)
	}
	// One fresh socket per request, each bounded by its own cut-off; the three rule
	// questions (one per chain) share the rule socket.
	want := []time.Duration{NftTableBy, NftChainBy, NftRuleBy}
	if !slices.Equal(got, want) {
		t.Errorf("socket deadlines %v, want %v (one fresh socket per request)", got, want)
	}

	// A cut-off already passed: nothing is asked and the dump times out.
	r = testReader(t, sampleKernel(t))
	r.tableBy = 0
	rowsEqual(t, "table cut-off", r.Read(context.Background()).Diag, "error|nftables:table:timeout")
	r = testReader(t, sampleKernel(t))
	r.ruleBy = 0
	rowsEqual(t, "rule cut-off", r.Read(context.Background()).Diag, "fallthrough|nftables:rule:timeout")

	// A cancelled context ends the read as a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rowsEqual(t, "cancelled", testReader(t, sampleKernel(t)).Read(ctx).Diag, "error|nftables:table:timeout")

	// A socket that cannot be bounded is not used.
	r = testReader(t, sampleKernel(t))
	r.setDeadline = func(*netlink.Conn, time.Time) error { return errors.New("not supported") }
	rowsEqual(t, "unbounded", r.Read(context.Background()).Diag, "error|nftables:table:io_error")
}

// TestNftReaderOneRuleSocket checks that the rule questions share one socket: every
// chain is still asked, in order, on a socket opened once. A ruleset without addressable chains opens no rule socket at all, so a rule cut-off
// that has already passed does not stop it from answering.
func TestNftReaderOneRuleSocket(t *testing.T) {
	k := sampleKernel(t)
	var asked []string
	inner := k.rules
	k.rules = func(req netlink.Message, table, chain string) ([]netlink.Message, error) {
		asked = append(asked, table+"/"+chain)
		return inner(req, table, chain)
	}
	socks := 0
	r := testReader(t, k)
	r.setDeadline = func(*netlink.Conn, time.Time) error { socks++; return nil }
	if res := r.Read(context.Background()); !res.Answered || len(res.Rules) != 3 {
		t.Fatalf("result %+v", res)
	}
	if want := []string{"filter/INPUT", "filter/custom-jump", "nat/POSTROUTING"}; !slices.Equal(asked, want) {
		t.Errorf("rule questions %q, want %q", asked, want)
	}
	// That each socket is closed again is checked on real sockets, in
	// TestRealNftablesRuleSocket; the test dialer's Close does nothing.
	if socks != 3 {
		t.Errorf("%d sockets opened, want 3 (tables, chains, rules)", socks)
	}

	k = &fakeKernel{tables: replies(tableMsg(t, 1, "filter")), chains: replies(chainMsg(t, chainSpec{1, "filter", "", nil, nil}))}
	r = testReader(t, k)
	r.ruleBy = 0
	opened := 0
	r.setDeadline = func(*netlink.Conn, time.Time) error { opened++; return nil }
	res := r.Read(context.Background())
	if !res.Answered || len(res.Diag) != 0 || opened != 2 || k.ruleRequests != 0 {
		t.Errorf("no addressable chain: %d sockets, %d rule requests, %+v", opened, k.ruleRequests, res)
	}
}

// TestNftReaderRuleLoopStops checks the checks made before every chain on the shared
// rule socket: a command that ends, or a rule cut-off that passes, after the first
// chain was read stops the read as a rule timeout without asking the next chain.
func TestNftReaderRuleLoopStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := sampleKernel(t)
	inner := k.rules
	k.rules = func(req netlink.Message, table, chain string) ([]netlink.Message, error) {
		cancel()
		return inner(req, table, chain)
	}
	res := testReader(t, k).Read(ctx)
	rowsEqual(t, "cancelled between chains", res.Diag, "fallthrough|nftables:rule:timeout")
	if k.ruleRequests != 1 || res.Answered || !res.TablesSeen || len(res.Rules) != 0 {
		t.Errorf("cancelled between chains: %d rule requests, %+v", k.ruleRequests, res)
	}

	start := time.Unix(1000, 0)
	clock := start
	k = sampleKernel(t)
	inner = k.rules
	k.rules = func(req netlink.Message, table, chain string) ([]netlink.Message, error) {
		clock = start.Add(NftRuleBy)
		return inner(req, table, chain)
	}
	r := testReader(t, k)
	r.now = func() time.Time { return clock }
	res = r.Read(context.Background())
	rowsEqual(t, "cut-off between chains", res.Diag, "fallthrough|nftables:rule:timeout")
	if k.ruleRequests != 1 || res.Answered || !res.TablesSeen || len(res.Rules) != 0 {
		t.Errorf("cut-off between chains: %d rule requests, %+v", k.ruleRequests, res)
	}
}

// nftOnlyRows renders an nftables read as the kernel's answer on a host without
// legacy tables.
func nftOnlyRows(res NftResult, rules bool) []rows.Row {
	return kernel{nft: res, legacy: legacyNone}.rows(rules)
}

// TestNftReaderTableSocket covers a table socket that cannot be opened: a kernel
// without the nftables protocol has nothing to read (no row, and not a failure),
// while any other cause is a failure that says so.
func TestNftReaderTableSocket(t *testing.T) {
	for _, tt := range []struct {
		err    error
		absent bool
		diag   []string
	}{
		{os.NewSyscallError("socket", unix.EPROTONOSUPPORT), true, nil},
		{os.NewSyscallError("socket", unix.EAFNOSUPPORT), true, nil},
		{os.NewSyscallError("socket", unix.EPERM), false, []string{"error|nftables:socket:eperm"}},
		{os.NewSyscallError("socket", unix.ENOBUFS), false, []string{"error|nftables:socket:io_error"}},
	} {
		k := sampleKernel(t)
		fail := nftables.WithSockOptions(func(*netlink.Conn) error { return tt.err })
		r := newNftReader(nftables.WithTestDial(k.dial(t)), fail)
		r.setDeadline = func(*netlink.Conn, time.Time) error { return nil }
		res := r.Read(context.Background())
		rowsEqual(t, tt.err.Error(), res.Diag, tt.diag...)
		if res.Absent != tt.absent || res.Answered || res.TablesSeen {
			t.Errorf("%v: %+v", tt.err, res)
		}
	}
}

// TestNftReaderRuleSocketFailures covers the rule socket itself: one that cannot be
// bounded is not used (an I/O failure of the rule dump), and one that cannot be
// opened for want of descriptors also writes the row an operator can act on.
func TestNftReaderRuleSocketFailures(t *testing.T) {
	k := sampleKernel(t)
	r := testReader(t, k)
	calls := 0
	r.setDeadline = func(*netlink.Conn, time.Time) error {
		if calls++; calls == 3 {
			return errors.New("not supported")
		}
		return nil
	}
	res := r.Read(context.Background())
	rowsEqual(t, "unbounded rule socket", res.Diag, "fallthrough|nftables:rule:io_error")
	if k.ruleRequests != 0 || res.Answered || !res.TablesSeen {
		t.Errorf("unbounded rule socket: %d rule requests, %+v", k.ruleRequests, res)
	}

	// An option that runs before the reader's own hook fails the third open the way
	// the socket call fails when descriptors run out.
	k = sampleKernel(t)
	dials := 0
	exhaust := nftables.WithSockOptions(func(*netlink.Conn) error {
		if dials++; dials == 3 {
			return os.NewSyscallError("socket", unix.EMFILE)
		}
		return nil
	})
	r = newNftReader(nftables.WithTestDial(k.dial(t)), exhaust)
	r.setDeadline = func(*netlink.Conn, time.Time) error { return nil }
	res = r.Read(context.Background())
	rowsEqual(t, "rule socket not opened", res.Diag, "error|fd_exhausted", "fallthrough|nftables:rule:io_error")
	if k.ruleRequests != 0 || res.Answered || !res.TablesSeen || res.FailedReason != parse.ReasonIOError {
		t.Errorf("rule socket not opened: %d rule requests, %+v", k.ruleRequests, res)
	}
}

func TestSocketRow(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{os.NewSyscallError("socket", unix.EMFILE), "error|fd_exhausted"},
		{os.NewSyscallError("socket", unix.ENFILE), "error|fd_exhausted"},
		{os.NewSyscallError("socket", unix.EPERM), "error|nftables:socket:eperm"},
		{os.NewSyscallError("bind", unix.EACCES), "error|nftables:socket:eperm"},
		{os.NewSyscallError("socket", unix.EPROTONOSUPPORT), ""},
		{os.NewSyscallError("socket", unix.EAFNOSUPPORT), ""},
		{errors.New("other"), ""},
	}
	for _, tt := range tests {
		r, ok := socketRow(tt.err)
		if got := r.Text(); ok != (tt.want != "") || (ok && got != tt.want) {
			t.Errorf("socketRow(%v) = %q, %v; want %q", tt.err, got, ok, tt.want)
		}
	}
}

func TestReasonOfCutOff(t *testing.T) {
	d := time.Unix(100, 0)
	if got := reasonOf(errors.New("anything"), d, d); got != parse.ReasonTimeout {
		t.Errorf("failure at the cut-off: %q", got)
	}
	if got := reasonOf(errors.New("anything"), d, d.Add(-time.Second)); got != parse.ReasonIOError {
		t.Errorf("failure before the cut-off: %q", got)
	}
	if got := reasonOf(nil, d, d.Add(time.Hour)); got != parse.ReasonOK {
		t.Errorf("success after the cut-off: %q", got)
	}
}
