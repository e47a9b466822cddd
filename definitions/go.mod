module github.com/yuzugo/yuzu/definitions

go 1.26.0
