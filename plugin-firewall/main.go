// Command yuzu-plugin-firewall is the firewall plugin: two read-only actions, state and
// rules, that say whether the host firewall is on, which firewall answered, and what
// rules it holds. Windows asks the firewall policy over COM, macOS reads the
// Application Firewall and pf, and Linux walks a ladder of firewalld, nftables, ufw and
// iptables. See docs/firewall.md.
package main

import "github.com/yuzugo/yuzu/sdk"

func main() {
	sdk.Serve(newPlugin())
}
