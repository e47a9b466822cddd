package main

import (
	"testing"

	"github.com/yuzugo/yuzu/sdk/sdktest"
)

func TestMain(m *testing.M) {
	removeStaleTestbeds()
	sdktest.Main(m)
}
