module github.com/yuzugo/yuzu/plugin-tags

go 1.26.0
