package main

import "github.com/yuzugo/yuzu/plugin-firewall/internal/darwin"

// newReader reads the Application Firewall and pf.
func newReader() reader { return darwin.New() }
