package sdk

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
)

const stopGraceForTest = 5 * time.Second

// fakeStream is a server stream that records what the server sends.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	mu   sync.Mutex
	sent []*pluginv1.ExecuteResponse
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) Send(r *pluginv1.ExecuteResponse) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, r)
	return nil
}
