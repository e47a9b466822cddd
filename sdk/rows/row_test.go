package rows

import (
	"slices"
	"testing"
)

// Text is the raw join: the escaping Format applies must not happen here.
func TestRowText(t *testing.T) {
	rs := []Row{
		New("backend", "nftables"),
		New("rule", "1", "22/tcp", "ALLOW IN", "Anywhere"),
		New("empty"),
		New("raw", "a|b", "c\\"),
		{Kind: "literal", Fields: []string{"x"}},
	}
	want := []string{"backend|nftables", "rule|1|22/tcp|ALLOW IN|Anywhere", "empty", "raw|a|b|c\\", "literal|x"}
	if got := Texts(rs); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Texts(nil); len(got) != 0 {
		t.Errorf("Texts(nil) = %q", got)
	}
}
