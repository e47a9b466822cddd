package row

import (
	"slices"
	"testing"
)

func TestText(t *testing.T) {
	rows := []Row{
		New("backend", "nftables"),
		New("rule", "1", "22/tcp", "ALLOW IN", "Anywhere"),
		New("empty"),
		New("raw", "a|b", "c\\"), // no escaping here: the SDK escapes on write
	}
	want := []string{"backend|nftables", "rule|1|22/tcp|ALLOW IN|Anywhere", "empty", "raw|a|b|c\\"}
	if got := Texts(rows); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
