package metrics

import "testing"

func TestParseStatm(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"5403 1510 1153 184 0 404 0\n", 1510 * 4096, true},
		{"5403 0 1153 184 0 404 0\n", 0, true},
		{"5403\n", 0, false},
		{"", 0, false},
		{"5403 -1 0\n", 0, false},
		{"5403 x 0\n", 0, false},
	} {
		got, ok := parseStatm([]byte(c.in), 4096)
		if got != c.want || ok != c.ok {
			t.Errorf("parseStatm(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if rss, ok := residentBytes(); !ok || rss == 0 {
		t.Errorf("residentBytes() = %d, %v", rss, ok)
	}
}
