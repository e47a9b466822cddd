// Command yuzu-agent is the endpoint agent: it supervises plugin child processes and
// runs their actions. See `yuzu-agent --help`.
package main

import (
	"os"

	"github.com/yuzugo/yuzu/agent/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
