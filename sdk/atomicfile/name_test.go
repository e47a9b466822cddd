package atomicfile

import "testing"

func TestIsTempName(t *testing.T) {
	for _, c := range []struct {
		base, name string
		want       bool
	}{
		{"tags.json", "tags.json.tmp.0123456789abcdef", true},
		{"tags.json", "tags.json.tmp.ffffffffffffffff", true},
		{"tags.json", "tags.json.tmp.0123456789ABCDEF", false},
		{"tags.json", "tags.json.tmp.0123456789abcde", false},
		{"tags.json", "tags.json.tmp.0123456789abcdef0", false},
		{"tags.json", "tags.json.tmp.0123456789abcdeg", false},
		{"tags.json", "tags.json.tmp.", false},
		{"tags.json", "tags.json", false},
		{"tags.json", "tags.jsonXtmp.0123456789abcdef", false},
		{"tags.json", "other.tmp.0123456789abcdef", false},
		{"tags.json", "xtags.json.tmp.0123456789abcdef", false},
		{"", ".tmp.0123456789abcdef", false},
	} {
		if got := IsTempName(c.base, c.name); got != c.want {
			t.Errorf("IsTempName(%q, %q) = %v, want %v", c.base, c.name, got, c.want)
		}
	}
}

// FuzzIsTempName checks that every name IsTempName accepts has the exact shape, and
// that the names tempName generates are accepted.
func FuzzIsTempName(f *testing.F) {
	f.Add("tags.json", "tags.json.tmp.0123456789abcdef")
	f.Add("a", "a.tmp.zz")
	f.Fuzz(func(t *testing.T, base, name string) {
		if IsTempName(base, name) {
			if len(name) != len(base)+len(tempInfix)+tempHexLen || name[:len(base)] != base {
				t.Fatalf("accepted %q for %q", name, base)
			}
		}
		if base == "" {
			return
		}
		gen, err := TempName(base)
		if err != nil {
			t.Fatal(err)
		}
		if !IsTempName(base, gen) {
			t.Fatalf("generated %q not recognised for %q", gen, base)
		}
	})
}
