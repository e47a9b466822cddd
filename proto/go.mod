module github.com/yuzugo/yuzu/proto

go 1.26.0
