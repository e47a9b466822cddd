package main

import "github.com/yuzugo/yuzu/plugin-firewall/internal/windows"

// newReader asks the Windows Firewall policy over COM.
func newReader() reader { return windows.New() }
