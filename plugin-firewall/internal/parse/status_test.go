package parse

import (
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk/subprocess"
)

func TestSubprocessComplete(t *testing.T) {
	ok := subprocess.Result{ToolRan: true, ExitCode: 0, Output: []byte("x"), Reason: subprocess.ReasonExited}
	tests := []struct {
		name string
		res  subprocess.Result
		want bool
	}{
		{"clean", ok, true},
		{"clean empty output", subprocess.Result{ToolRan: true, Reason: subprocess.ReasonExited}, true},
		{"not run", subprocess.Result{ExitCode: -1}, false},
		{"exit 1", subprocess.Result{ToolRan: true, ExitCode: 1, Reason: subprocess.ReasonExited}, false},
		{"timed out", subprocess.Result{ToolRan: true, ExitCode: -1, TimedOut: true, Reason: subprocess.ReasonDeadline}, false},
		{"truncated", subprocess.Result{ToolRan: true, OutputTruncated: true, Reason: subprocess.ReasonExited}, false},
	}
	for _, tt := range tests {
		if got := SubprocessComplete(tt.res); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestGateAndClamp(t *testing.T) {
	for _, s := range []Status{Unknown, Enabled, Disabled} {
		for _, seen := range []bool{false, true} {
			if got := GateState(false, seen, s); got != Unknown {
				t.Errorf("GateState(false, %v, %v) = %v, want unknown", seen, s, got)
			}
		}
	}
	tests := []struct {
		seen     bool
		in, want Status
	}{
		{true, Disabled, Unknown},
		{true, Enabled, Enabled},
		{true, Unknown, Unknown},
		{false, Disabled, Disabled},
		{false, Enabled, Enabled},
	}
	for _, tt := range tests {
		if got := Clamp(tt.seen, tt.in); got != tt.want {
			t.Errorf("Clamp(%v, %v) = %v, want %v", tt.seen, tt.in, got, tt.want)
		}
		if got := GateState(true, tt.seen, tt.in); got != tt.want {
			t.Errorf("GateState(true, %v, %v) = %v, want %v", tt.seen, tt.in, got, tt.want)
		}
	}
}

func TestNftRowsAndReasons(t *testing.T) {
	if got := NftDiagRow(DumpTable, ReasonTimeout).Text(); got != "error|nftables:table:timeout" {
		t.Errorf("diag row %q", got)
	}
	if got := NftFallthroughRow(DumpRule, "errno:22").Text(); got != "fallthrough|nftables:rule:errno:22" {
		t.Errorf("fallthrough row %q", got)
	}
	reasons := map[int]string{1: "eperm", -1: "eperm", 0: "errno:undecoded", -22: "errno:22", 105: "errno:105"}
	for n, want := range reasons {
		if got := ErrnoReason(n); got != want {
			t.Errorf("ErrnoReason(%d) = %q, want %q", n, got, want)
		}
	}
	if got := ErrnoReason(-1 << 63); got != ReasonErrnoUndecoded {
		t.Errorf("most negative errno: %q", got)
	}
	for _, r := range []string{ReasonOK, ReasonTimeout, ReasonEPERM, ReasonErrnoUndecoded,
		ReasonOversized, ReasonIOError} {
		if r == "" || strings.ContainsAny(r, "| ") {
			t.Errorf("bad reason token %q", r)
		}
	}
}
