package dispatch

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// answer is an Executor that answers every command with res and err.
type answer struct {
	res sdk.Result
	err error
}

func (a answer) Execute(context.Context, supervisor.Request, func([]string) error) (sdk.Result, error) {
	return a.res, a.err
}

// TestAuditLine: every command ends with one audit line naming it, its parameters by
// name and its outcome; the values (which may be secrets) only at debug, and plugin
// text cannot forge a second line.
func TestAuditLine(t *testing.T) {
	req := supervisor.Request{Plugin: "tags", Command: host.Command{ID: "cmd-1\nforged", Action: "set", Params: map[string]string{"value": "s3cret", "key": "env"}}}
	for _, c := range []struct {
		name       string
		level      hclog.Level
		exec       answer
		want, miss []string
	}{
		{"info", hclog.Info, answer{res: sdk.Partial("tags:x")},
			[]string{"[INFO]  command:", `id=cmd-1\x0aforged`, "plugin=tags", "action=set", `params="key,value"`, "status=CONSTRAINED", "completeness=PARTIAL", "rc=0", "duration="},
			[]string{"s3cret", "values="}},
		{"debug", hclog.Debug, answer{res: sdk.Result{Code: 1}},
			[]string{"[DEBUG] command:", "rc=1", `values="key=\"env\" value=\"s3cret\""`}, nil},
		{"agent error", hclog.Info, answer{err: errors.New("plugin tags is not running")},
			[]string{"status=agent_error", "rc=1", `error="plugin tags is not running"`}, []string{"s3cret"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: c.level})
			d := New(c.exec, Options{Audit: log, AuditLevel: c.level})
			_, _ = d.Do(context.Background(), Request{Request: req}, func([]string) error { return nil })
			out := buf.String()
			if n := strings.Count(out, "\n"); n != 1 {
				t.Fatalf("want one audit line, got %d:\n%s", n, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("audit line lacks %q:\n%s", w, out)
				}
			}
			for _, m := range c.miss {
				if strings.Contains(out, m) {
					t.Errorf("audit line has %q:\n%s", m, out)
				}
			}
		})
	}
	// No logger: no line, and nothing breaks.
	if _, err := New(answer{}, Options{}).Do(context.Background(), Request{Request: req}, nil); err != nil {
		t.Fatal(err)
	}
}

// A command refused at the door (the queue full) has its audit line at debug, as the
// session's own rejections do: a flood of commands must not flood the log at info.
func TestAuditOfRefusedAtDebug(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
	r := &recorder{release: make(chan struct{})}
	d := New(r, Options{PerPlugin: 1, QueueSize: 1, Audit: log, AuditLevel: hclog.Info})
	done := make(chan struct{}, 2)
	for range 2 { // one runs, one waits in the queue
		go func() {
			_, _ = d.Do(context.Background(), req("p"), nil)
			done <- struct{}{}
		}()
	}
	waitFor(t, func() bool { return r.reached.Load() == 1 && len(d.queue) == 1 })
	for range 5 {
		if _, err := d.Do(context.Background(), req("p"), nil); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("want the queue full, got %v", err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("refused commands logged at info:\n%s", buf.String())
	}
	close(r.release)
	<-done
	<-done
	if !strings.Contains(buf.String(), "[INFO]  command:") {
		t.Errorf("the command that ran has no audit line at info:\n%s", buf.String())
	}
}

// A start its OnStart refuses (the journal could not record it) never reaches the
// plugin, and Do returns the refusal.
func TestOnStartRefuses(t *testing.T) {
	r := &recorder{}
	d := New(r, Options{})
	refusal := errors.New("journal: disk full")
	q := req("p")
	q.OnStart = func() error { return refusal }
	if _, err := d.Do(context.Background(), q, nil); !errors.Is(err, refusal) {
		t.Errorf("Do = %v, want the refusal", err)
	}
	if r.reached.Load() != 0 {
		t.Error("a refused start reached the plugin")
	}
}
