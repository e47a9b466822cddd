// Package linux reads the host firewall on Linux by walking a fixed ladder of sources
// and reporting the first one that answers: firewalld over D-Bus, then nftables over
// netlink, then `ufw status numbered`, then `iptables -S`, else none.
//
// The decision logic (what counts as an answer, which rows each outcome writes, how a
// later backend's verdict is clamped by nftables tables already seen) is plain Go over
// plain values and is tested on its own; the D-Bus and netlink readers live in the
// _linux.go files and are handed to the Ladder as functions. docs/firewall.md describes
// every row.
package linux
