module github.com/yuzugo/yuzu/agent

go 1.26.0

require (
	github.com/yuzugo/yuzu/definitions v0.0.0
	github.com/yuzugo/yuzu/proto v0.0.0
	github.com/yuzugo/yuzu/sdk v0.0.0
)

replace (
	github.com/yuzugo/yuzu/definitions => ../definitions
	github.com/yuzugo/yuzu/proto => ../proto
	github.com/yuzugo/yuzu/sdk => ../sdk
)
