// Package linux reads the host firewall on Linux. firewalld, when it runs, answers
// over D-Bus; otherwise the kernel answers with the union of its two rule stores,
// nftables (over netlink) and the legacy iptables tables (iptables-legacy-save and
// ip6tables-legacy-save), with `ufw status numbered` asked first on a host whose
// nftables holds no table. Where nothing can be read, the answer is none.
//
// The decision logic (what counts as an answer, which rows each outcome writes, when
// ufw's "off" may stand) is plain Go over plain values and is tested on its own; the
// readers are handed to the Ladder as functions. docs/firewall.md describes every row.
package linux
