module github.com/yuzugo/yuzu/tools

go 1.26.0
