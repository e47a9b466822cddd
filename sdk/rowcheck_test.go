package sdk

import (
	"context"
	"strings"
	"testing"
)

func TestCheckRow(t *testing.T) {
	p := New("procs", "1.0.0", "processes")
	p.Handle("list", func(_ context.Context, _ *Request, _ *Output) (Result, error) { return Done(), nil },
		Row("proc", "pid:int32", "user", "command"),
		Row("count", "n:int64"),
		Row("done"),
		Row("flag", "on:bool", "why"),
	)
	a := p.byName["list"]
	cases := []struct {
		row, kind, reason string
	}{
		{"proc|42|root|/sbin/init", "", ""},
		{"proc|42|root|a|command|with|pipes", "", ""}, // the last field is free text
		{`proc|42|ro\|ot|cmd`, "", ""},                // an escaped pipe stays in its field
		{"error|anything at all", "", ""},
		{"done", "", ""},
		{"count|9223372036854775807", "", ""},
		{"flag|true|x", "", ""},
		{"proc|42", "proc", "row proc has 1 of its 3 declared fields"},
		{"proc", "proc", "row proc has none of its 3 declared fields"},
		{"proc|notanint|root|cmd", "proc", `field pid is "notanint", not int32`},
		{"proc|4294967296|root|cmd", "proc", "not int32"},
		{"count|1.5", "count", "not int64"},
		{"flag|yes|x", "flag", "not bool"},
		{"done|extra", "done", "declares no fields but has some"},
		{"thread|1|2", UndeclaredKind, `row kind "thread" is not declared by action list`},
		{"", UndeclaredKind, "not declared"},
	}
	for _, c := range cases {
		got := a.CheckRow(c.row)
		switch {
		case c.reason == "" && got != nil:
			t.Errorf("%q: %+v, want no mismatch", c.row, got)
		case c.reason != "" && (got == nil || got.Kind != c.kind || !strings.Contains(got.Reason, c.reason)):
			t.Errorf("%q: %+v, want kind %q and %q", c.row, got, c.kind, c.reason)
		}
	}
	// An action that declares no rows made no claim to check.
	p.Handle("free", func(_ context.Context, _ *Request, _ *Output) (Result, error) { return Done(), nil })
	if got := p.byName["free"].CheckRow("anything|at|all"); got != nil {
		t.Errorf("an action without rows: %+v", got)
	}
}

func BenchmarkCheckRow(b *testing.B) {
	p := New("procs", "1.0.0", "processes")
	p.Handle("list", func(_ context.Context, _ *Request, _ *Output) (Result, error) { return Done(), nil },
		Row("entry", "name", "type", "size:int64"))
	a := p.byName["list"]
	b.ReportAllocs()
	for b.Loop() {
		if a.CheckRow("entry|some file name.txt|file|123456") != nil {
			b.Fatal("mismatch")
		}
	}
}
