module github.com/yuzugo/yuzu/agent

go 1.26.0
