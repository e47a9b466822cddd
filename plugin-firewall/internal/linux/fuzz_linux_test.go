package linux

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// FuzzNftReader feeds arbitrary payloads to the library as the kernel's table, chain
// and rule replies. Whatever the bytes, the reader must return (the fake transport has
// no socket deadline, so a hang would be the decoder's), must not panic, must either
// answer or say why not, and must never invent a table it was not sent.
func FuzzNftReader(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 11, 0, 1, 0, 'f', 'i', 'l', 't', 'e', 'r', 0, 0}, []byte{}, []byte{})
	f.Add([]byte{2}, []byte{1, 0, 0, 0, 8, 0, 5, 0, 0, 0}, []byte{1, 0, 0, 0})
	f.Add([]byte{}, []byte{1, 0, 0, 0, 100, 0, 1, 0}, []byte{0xff, 0xff, 0xff, 0xff, 4, 0, 0x80, 0})
	f.Fuzz(func(t *testing.T, table, chain, rule []byte) {
		k := &fakeKernel{
			tables: func(netlink.Message) ([]netlink.Message, error) {
				return []netlink.Message{{Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWTABLE)}, Data: table}}, nil
			},
			chains: func(netlink.Message) ([]netlink.Message, error) {
				return []netlink.Message{{Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWCHAIN)}, Data: chain}}, nil
			},
			rules: func(netlink.Message, string, string) ([]netlink.Message, error) {
				return []netlink.Message{{Header: netlink.Header{Type: msgType(unix.NFT_MSG_NEWRULE)}, Data: rule}}, nil
			},
		}
		done := make(chan NftResult, 1)
		go func() { done <- testReader(t, k).Read(context.Background()) }()
		var res NftResult
		select {
		case res = <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("read did not return: table=%x chain=%x rule=%x", table, chain, rule)
		}
		if res.Answered == (len(res.Diag) > 0) {
			t.Fatalf("answered=%v with diag %v", res.Answered, res.Diag)
		}
		for _, r := range res.Diag {
			if r.Kind != "error" && r.Kind != "fallthrough" || len(r.Fields) != 1 || !strings.HasPrefix(r.Fields[0], "nftables:") {
				t.Fatalf("diag row %+v", r)
			}
		}
		if res.TablesSeen && len(table) < 4 {
			t.Fatalf("tables seen from a %d-byte reply", len(table))
		}
		for _, c := range res.Chains {
			if c.Name == "" {
				t.Fatalf("nameless chain kept: %+v", c)
			}
		}
	})
}
