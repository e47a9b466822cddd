// Command yuzu-plugin-tags is the tags plugin: free-form key/value labels kept on the
// device in <data dir>/tags.json, which the agent reports to the server at Register
// for tag:<key> scope targeting. See README.md.
package main

import "github.com/yuzugo/yuzu/sdk"

func main() {
	sdk.Serve(newPlugin())
}
