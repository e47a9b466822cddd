package host

import (
	"testing"
	"time"
)

func TestRestartBackoff(t *testing.T) {
	p := DefaultRestartPolicy()
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond}
	for i, w := range want {
		if d, ok := p.Backoff(i + 1); !ok || d != w {
			t.Errorf("Backoff(%d) = %v, %v; want %v, true", i+1, d, ok, w)
		}
	}
	if d, ok := p.Backoff(6); ok {
		t.Errorf("Backoff(6) = %v, true; want false: the budget of 5 is spent", d)
	}
	p.Budget = 100
	if d, _ := p.Backoff(10); d != 30*time.Second {
		t.Errorf("Backoff(10) = %v, want the 30 s cap", d)
	}
	if d, _ := p.Backoff(80); d != 30*time.Second {
		t.Errorf("Backoff(80) = %v, want the 30 s cap (no overflow)", d)
	}
}
