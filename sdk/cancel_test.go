package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/sdktest"
)

// Cancelling a command cancels the handler's ctx but keeps the stream open, so the
// host sees the rows the handler wrote while stopping and knows that it stopped.
func TestCancelKeepsStreamUntilHandlerStops(t *testing.T) {
	p := sdk.New("canceller", "1.0.0", "test")
	p.Handle("wait", func(ctx context.Context, _ *sdk.Request, out *sdk.Output) (sdk.Result, error) {
		out.Row("waiting", "yes")
		<-ctx.Done()
		out.Row("stopped", ctx.Err().Error())
		return sdk.Result{Code: 1}, nil
	})
	h := sdktest.New(t, p, sdk.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	o, err := h.Execute(ctx, host.Command{Action: "wait"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := strings.Join(o.Rows, "\n"); got != "waiting|yes\nstopped|context canceled" {
		t.Errorf("rows = %q", got)
	}
	if o.Result.Code != 1 {
		t.Errorf("result = %+v, want the handler's own rc 1", o.Result)
	}
}
