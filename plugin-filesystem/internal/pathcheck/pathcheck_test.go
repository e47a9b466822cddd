package pathcheck

import (
	"path/filepath"
	"runtime"
	"testing"
)

func TestContains(t *testing.T) {
	tests := []struct {
		base, p string
		want    bool
	}{
		{"/x/log", "/x/log", true},
		{"/x/log", "/x/log/a", true},
		{"/x/log", "/x/log/a/b", true},
		{"/x/log", "/x/logbackup", false}, // shares the prefix, not the element
		{"/x/log", "/x/logbackup/a", false},
		{"/x/log", "/x/lo", false},
		{"/x/log", "/x", false},
		{"/x/log", "/y/log", false},
		{"/", "/", true},
		{"/", "/etc", true},
		{"", "/etc", false},
	}
	for _, tc := range tests {
		if got := Contains(tc.base, tc.p); got != tc.want {
			t.Errorf("Contains(%q, %q) = %v, want %v", tc.base, tc.p, got, tc.want)
		}
	}
	if runtime.GOOS == "windows" {
		for _, tc := range []struct {
			base, p string
			want    bool
		}{
			{`C:\`, `C:\Windows`, true},
			{`C:\data`, `C:\data\x`, true},
			{`C:\data`, `C:\database`, false},
		} {
			if got := Contains(tc.base, tc.p); got != tc.want {
				t.Errorf("Contains(%q, %q) = %v, want %v", tc.base, tc.p, got, tc.want)
			}
		}
	}
}

func TestLexicalParent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"foo.txt", ""},
		{"/foo", "/"},
		{"a/b", "a"},
		{"a//b", "a"},
		{"a/b/", "a/b"},
		{"/a/b/c.txt", "/a/b"},
		{"./x", "."},
		{"../x", ".."},
	}
	for _, tc := range tests {
		if got := lexicalParent(filepath.FromSlash(tc.in)); got != filepath.FromSlash(tc.want) {
			t.Errorf("lexicalParent(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
