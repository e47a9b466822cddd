package linux

import (
	"context"

	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// New returns the ladder wired to the real sources with DefaultTimeouts: firewalld on
// the system bus, nftables in the plugin's network namespace, and the ufw and iptables
// binaries at their standard paths.
func New() *Ladder { return NewWithTimeouts(DefaultTimeouts()) }

// NewWithTimeouts returns the ladder wired to the real sources, bounded by t.
func NewWithTimeouts(t Timeouts) *Ladder {
	nft := newNftReader()
	nft.tableBy, nft.chainBy, nft.ruleBy = t.NftTable, t.NftChain, t.NftRule
	return &Ladder{
		Firewalld: func(ctx context.Context) FirewalldResult {
			return queryFirewalld(ctx, t.Firewalld, connectSystemBus)
		},
		Nftables:     func(ctx context.Context) NftResult { return nft.Read(ctx) },
		Run:          subprocess.Run,
		UfwPath:      DefaultUfwPath,
		IptablesPath: DefaultIptables,
		ToolTimeout:  t.Tool,
		Total:        t.Total,
	}
}
