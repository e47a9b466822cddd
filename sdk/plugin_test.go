package sdk

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
)

func nop(context.Context, *Request, *Output) (Result, error) { return Done(), nil }

func TestValidate(t *testing.T) {
	cases := []struct {
		name, version string
		actions       int
		wantErr       string
	}{
		{"fs", "1.0.0", 1, ""},
		{"a_B_9", "x", 1, ""},
		{strings.Repeat("n", 64), "1", 1, ""},
		{strings.Repeat("n", 65), "1", 1, "want 1-64 letters"},
		{"", "1", 1, "want 1-64 letters"},
		{"has-dash", "1", 1, "want 1-64 letters"},
		{"has space", "1", 1, "want 1-64 letters"},
		{"ünï", "1", 1, "want 1-64 letters"},
		{"ok", "", 1, "empty version"},
		{"ok", "1", 0, "no actions"},
	}
	for _, c := range cases {
		p := New(c.name, c.version, "")
		for i := range c.actions {
			p.Handle("a"+string(rune('0'+i)), nop)
		}
		err := p.Validate()
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("Validate(%q, %q, %d actions) = %v, want %q", c.name, c.version, c.actions, err, c.wantErr)
		}
	}
}

func TestHandleRejectsProgrammingErrors(t *testing.T) {
	cases := []struct {
		name string
		do   func(p *Plugin)
		want string
	}{
		{"duplicate", func(p *Plugin) { p.Handle("a", nop); p.Handle("a", nop) }, `action "a" registered twice`},
		{"nil handler", func(p *Plugin) { p.Handle("b", nil) }, `action "b" has a nil handler`},
		{"probe without backend rows", func(p *Plugin) { p.Handle("c", nop, Row("state", "state"), MechanismProbe()) },
			"must declare the row kind backend"},
		{"probe with a required parameter", func(p *Plugin) {
			p.Handle("d", nop, Row("backend", "backend"), MechanismProbe(), Param("zone", TypeString, "", Required()))
		}, "no required parameter"},
		{"two probes", func(p *Plugin) {
			p.Handle("e", nop, Row("backend", "backend"), MechanismProbe())
			p.Handle("f", nop, Row("backend", "backend"), MechanismProbe())
		}, `action "e" is already the mechanism probe`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(v.(string), c.want) {
					t.Errorf("panic %v, want one containing %q", v, c.want)
				}
			}()
			c.do(New("p", "1", ""))
		})
	}
}

func TestActionsReturnsCopies(t *testing.T) {
	p := New("p", "1", "")
	p.Handle("a", nop, Describe("d"), OnAll(OSSupport{Level: SupportSupported, Rung: 2}))
	acts := p.Actions()
	if len(acts) != 1 || acts[0].Description != "d" || acts[0].Darwin.Rung != 2 || acts[0].Windows.Level != SupportSupported {
		t.Fatalf("Actions() = %+v", acts)
	}
	acts[0].Description = "changed"
	if p.Actions()[0].Description != "d" {
		t.Error("Actions() exposes the plugin's own actions")
	}
}

// Known keeps the defined values and turns any other number into the "nothing
// declared" value, so no undefined number travels on.
func TestKnown(t *testing.T) {
	for s := StatusUndeclared; s <= StatusConstrained; s++ {
		if s.Known() != s {
			t.Errorf("Status(%d).Known() = %d", s, s.Known())
		}
	}
	for _, s := range []Status{-1, 5, 1 << 30} {
		if s.Known() != StatusUndeclared {
			t.Errorf("Status(%d).Known() = %d, want StatusUndeclared", s, s.Known())
		}
	}
	for c := CompletenessUnknown; c <= CompletenessPartial; c++ {
		if c.Known() != c {
			t.Errorf("Completeness(%d).Known() = %d", c, c.Known())
		}
	}
	for _, c := range []Completeness{-1, 3, 1 << 30} {
		if c.Known() != CompletenessUnknown {
			t.Errorf("Completeness(%d).Known() = %d, want CompletenessUnknown", c, c.Known())
		}
	}
}

func TestEnumStrings(t *testing.T) {
	cases := []struct{ got, want string }{
		{StatusUndeclared.String(), "UNDECLARED"},
		{StatusOK.String(), "OK"},
		{StatusUnavailable.String(), "UNAVAILABLE"},
		{StatusPermissionDenied.String(), "PERMISSION_DENIED"},
		{StatusConstrained.String(), "CONSTRAINED"},
		{Status(5).String(), "UNDECLARED"},
		{Status(-1).String(), "UNDECLARED"},
		{CompletenessUnknown.String(), "UNKNOWN"},
		{CompletenessFull.String(), "FULL"},
		{CompletenessPartial.String(), "PARTIAL"},
		{Completeness(3).String(), "UNKNOWN"},
		{SupportUndeclared.String(), "undeclared"},
		{SupportUnsupported.String(), "unsupported"},
		{SupportPlanned.String(), "planned"},
		{SupportConstrained.String(), "constrained"},
		{SupportSupported.String(), "supported"},
		{SupportLevel(9).String(), "undeclared"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestResultConstructors(t *testing.T) {
	cases := []struct {
		got, want Result
	}{
		{Done(), Result{}},
		{Complete(), Result{Status: StatusOK, Completeness: CompletenessFull}},
		{Partial("x:y"), Result{Status: StatusConstrained, Completeness: CompletenessPartial, Provenance: "x:y"}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %+v, want %+v", c.got, c.want)
		}
	}
}

func TestConfigureErrorIsFailedPrecondition(t *testing.T) {
	p := New("p", "1", "")
	p.Handle("a", nop)
	p.OnConfigure(func(context.Context, Config) error { return errors.New("data dir unusable") })
	s := newServer(p, hclog.NewNullLogger())
	_, err := s.Configure(context.Background(), &pluginv1.ConfigureRequest{DataDir: "/nowhere"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "configure p: data dir unusable") {
		t.Errorf("Configure error %v", err)
	}
}

func TestServerShutdownCancelsInFlight(t *testing.T) {
	p := New("p", "1", "")
	started := make(chan struct{})
	seen := make(chan error, 1)
	p.Handle("wait", func(ctx context.Context, _ *Request, _ *Output) (Result, error) {
		close(started)
		<-ctx.Done()
		seen <- ctx.Err()
		return failed, nil
	})
	s := newServer(p, hclog.NewNullLogger())
	stream := &fakeStream{ctx: context.Background()}
	go func() { _ = s.Execute(&pluginv1.ExecuteRequest{Action: "wait"}, stream) }()
	<-started
	s.shutdown(stopGraceForTest)
	select {
	case err := <-seen:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler saw %v", err)
		}
	default:
		t.Error("shutdown returned before the in-flight handler saw its cancellation")
	}
}
