package linux

import (
	"context"

	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// New returns the ladder wired to the real sources with DefaultTimeouts: firewalld on
// the system bus, nftables and the legacy iptables tables of the plugin's network
// namespace, and ufw at its standard path.
func New() *Ladder { return NewWithTimeouts(DefaultTimeouts()) }

// NewWithTimeouts returns the ladder wired to the real sources, bounded by t.
func NewWithTimeouts(t Timeouts) *Ladder {
	nft := newNftReader()
	nft.tableBy, nft.chainBy, nft.ruleBy = t.NftTable, t.NftChain, t.NftRule
	return &Ladder{
		Firewalld: func(ctx context.Context) FirewalldResult {
			return queryFirewalld(ctx, t.Firewalld, connectSystemBus)
		},
		Nftables:    func(ctx context.Context) NftResult { return nft.Read(ctx) },
		Legacy:      newLegacyReader(subprocess.Run, t.Tool).Read,
		Run:         subprocess.Run,
		UfwPath:     DefaultUfwPath,
		ToolTimeout: t.Tool,
		Total:       t.Total,
	}
}
