package main

import "github.com/yuzugo/yuzu/plugin-firewall/internal/linux"

// newReader walks the Linux ladder: firewalld, nftables, ufw, iptables, none.
func newReader() reader { return linux.New() }
