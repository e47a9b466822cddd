module github.com/yuzugo/yuzu/integration

go 1.26.0
