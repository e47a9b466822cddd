package parse

import (
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// Status is a firewall verdict. The zero value is Unknown, so a verdict nobody set can
// never read as "off".
type Status uint8

// Verdicts.
const (
	Unknown Status = iota
	Enabled
	Disabled
)

// String renders the verdict the way the Application Firewall, pf and Windows rows
// spell it: enabled, disabled or unknown.
func (s Status) String() string {
	switch s {
	case Enabled:
		return "enabled"
	case Disabled:
		return "disabled"
	default:
		return "unknown"
	}
}

// Activity renders the verdict the way the Linux backends spell it: active, inactive
// or unknown.
func (s Status) Activity() string {
	switch s {
	case Enabled:
		return "active"
	case Disabled:
		return "inactive"
	default:
		return "unknown"
	}
}

// SubprocessComplete reports whether a tool's answer can be trusted as whole: the tool
// ran, exited 0, was not killed at its deadline and its output was not cut at the cap.
func SubprocessComplete(res subprocess.Result) bool {
	return res.Complete() && res.ExitCode == 0
}

// Clamp keeps ufw from contradicting the kernel: when the kernel's rules could not be
// read whole, ufw's "disabled" cannot be known to be true of the host, so it becomes
// Unknown.
func Clamp(unread bool, s Status) Status {
	if unread && s == Disabled {
		return Unknown
	}
	return s
}

// GateState is the verdict ufw reports: Unknown when its read was incomplete,
// otherwise the parsed verdict after Clamp.
func GateState(complete, unread bool, parsed Status) Status {
	if !complete {
		return Unknown
	}
	return Clamp(unread, parsed)
}

// Names of the nftables dumps, as they appear in error and fallthrough rows.
const (
	DumpSocket = "socket"
	DumpTable  = "table"
	DumpChain  = "chain"
	DumpRule   = "rule"
)

// NftDiagRow is the row naming a failed nftables read: error|nftables:<dump>:<reason>.
func NftDiagRow(dump, reason string) rows.Row {
	return rows.New("error", "nftables:"+dump+":"+reason)
}

// NftFallthroughRow is the row written when nftables read its tables but a later dump
// failed and the ladder moves on: fallthrough|nftables:<dump>:<reason>.
func NftFallthroughRow(dump, reason string) rows.Row {
	return rows.New("fallthrough", "nftables:"+dump+":"+reason)
}
