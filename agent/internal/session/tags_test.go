package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// tagsPlugins is a supervisor whose tags plugin answers get_all with rows and res.
type tagsPlugins struct {
	fakePlugins
	absent bool
	state  supervisor.State
	rows   []string
	res    sdk.Result
	err    error
	got    *[]supervisor.Request
}

func (p tagsPlugins) Has(name string) bool { return name == tagsPlugin && !p.absent }
func (p tagsPlugins) Status() []supervisor.Status {
	st := p.state
	if st == "" {
		st = supervisor.StateIdle
	}
	return []supervisor.Status{{Name: tagsPlugin, State: st, LastError: "boom"}}
}
func (p tagsPlugins) Execute(_ context.Context, req supervisor.Request, onRows func([]string) error) (sdk.Result, error) {
	if p.got != nil {
		*p.got = append(*p.got, req)
	}
	if p.err != nil {
		return sdk.Result{}, p.err
	}
	if err := onRows(p.rows); err != nil {
		return sdk.Result{}, err
	}
	return p.res, nil
}

func TestDeviceTags(t *testing.T) {
	many := []string{}
	want := map[string]string{}
	for i := range 3000 {
		k, v := fmt.Sprintf("key%04d", i), strings.Repeat("v", 448)
		many = append(many, rows.Format("tag", k, v))
		want[k] = v
	}
	many = append(many, "count|3000")
	for _, c := range []struct {
		name string
		p    tagsPlugins
		want map[string]string
		log  string
	}{
		{"none", tagsPlugins{rows: []string{"count|0"}}, map[string]string{}, ""},
		{"some", tagsPlugins{rows: []string{rows.Format("tag", "a|b", "x|y"), rows.Format("tag", "p", `C:\dir\`), "count|2"}},
			map[string]string{"a|b": "x|y", "p": `C:\dir\`}, ""},
		{"3,000 of the largest", tagsPlugins{rows: many}, want, ""},
		{"no plugin", tagsPlugins{absent: true}, nil, "[INFO]  registering without tags: reason=\"no tags plugin\""},
		{"failed plugin", tagsPlugins{state: supervisor.StateFailed}, nil, "the tags plugin is not ready (failed: boom)"},
		{"crashed", tagsPlugins{err: errors.New("plugin crashed")}, nil, "tags get_all: plugin crashed"},
		{"error row", tagsPlugins{rows: []string{"error|tags store unreadable: x"}, res: sdk.Result{Code: 1}}, nil, "tags store unreadable: x"},
		{"partial", tagsPlugins{rows: []string{"count|0"}, res: sdk.Partial("tags:load_failed")}, nil, "partial (tags:load_failed)"},
		{"no count", tagsPlugins{rows: []string{"tag|a|b"}}, nil, "1 tag rows, but the count says -1"},
		{"wrong count", tagsPlugins{rows: []string{"tag|a|b", "count|2"}}, nil, "the count says 2"},
		{"twice", tagsPlugins{rows: []string{"tag|a|b", "tag|a|c", "count|2"}}, nil, `listed twice`},
		{"after count", tagsPlugins{rows: []string{"count|0", "tag|a|b"}}, nil, "a tag row after the count"},
		{"other row", tagsPlugins{rows: []string{"other|a"}}, nil, `unexpected row`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			var got []supervisor.Request
			c.p.got = &got
			s := New(Options{Plugins: c.p, Logger: hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Info})})
			tags := s.deviceTags(context.Background())
			if !maps.Equal(tags, c.want) || (tags == nil) != (c.want == nil) {
				t.Errorf("tags %d, want %d", len(tags), len(c.want))
			}
			if c.log != "" && !strings.Contains(log.String(), c.log) {
				t.Errorf("log %q, want %q", log.String(), c.log)
			}
			if c.log == "" && log.Len() != 0 {
				t.Errorf("log %q, want none", log.String())
			}
			for _, r := range got {
				if r.Plugin != tagsPlugin || r.Action != tagsAction || !r.ParkAfter || r.Timeout != tagsTimeout {
					t.Errorf("request %+v", r)
				}
			}
			// The reason is logged once, not at every registration.
			n := log.Len()
			s.deviceTags(context.Background())
			if log.Len() != n {
				t.Errorf("the same reason logged again: %q", log.String()[n:])
			}
		})
	}
}

// A registration after one without tags says that the tags are back.
func TestDeviceTagsBack(t *testing.T) {
	var log bytes.Buffer
	p := &tagsPlugins{err: errors.New("plugin crashed")}
	s := New(Options{Plugins: p, Logger: hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Info})})
	s.deviceTags(context.Background())
	s.o.Plugins = tagsPlugins{rows: []string{"tag|a|b", "count|1"}}
	if tags := s.deviceTags(context.Background()); tags["a"] != "b" {
		t.Errorf("tags %v", tags)
	}
	if !strings.Contains(log.String(), "registering with tags again") {
		t.Errorf("log %q", log.String())
	}
}

// The bound is the tags plugin's own: a larger answer is refused, not cut.
func TestDeviceTagsBound(t *testing.T) {
	big := strings.Repeat("v", 1<<20)
	var rs []string
	for i := range maxTagsBytes/len(big) + 1 {
		rs = append(rs, rows.Format("tag", fmt.Sprint(i), big))
	}
	s := New(Options{Plugins: tagsPlugins{rows: append(rs, fmt.Sprintf("count|%d", len(rs)))}})
	if _, err := s.readTags(context.Background()); err == nil || !strings.Contains(err.Error(), "more than 16777216 bytes") {
		t.Errorf("err %v", err)
	}
}
