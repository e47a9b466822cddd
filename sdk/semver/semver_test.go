package semver

import "testing"

func TestParse(t *testing.T) {
	good := []string{"0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7",
		"1.0.0-x.7.z.92", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0+21AF26D3----117B344092BD",
		"99999999999999999999.0.0"}
	for _, s := range good {
		v, ok := Parse(s)
		if !ok {
			t.Errorf("Parse(%q) refused", s)
			continue
		}
		if v.String() != s {
			t.Errorf("Parse(%q).String() = %q", s, v.String())
		}
	}
	bad := []string{"", "1", "1.2", "1.2.3.4", "v1.2.3", "01.2.3", "1.02.3", "1.2.03", "1.2.3-", "1.2.3+", "1.2.3-01",
		"1.2.3-a..b", "1.2.3+a..b", "1.2.3-a_b", " 1.2.3", "1.2.3 ", "-1.2.3", "1.2.-3", "a.b.c"}
	for _, s := range bad {
		if _, ok := Parse(s); ok {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	// Leading zeros are allowed in build metadata.
	if v, ok := Parse("1.0.0+001"); !ok || v.Build != "001" {
		t.Errorf("Parse(1.0.0+001) = %+v, %v", v, ok)
	}
}

func TestCompare(t *testing.T) {
	// The precedence example of semver.org, in order.
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0", "10.0.0", "100000000000000000000.0.0"}
	for i := range order {
		for j := range order {
			c, ok := Compare(order[i], order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if !ok || c != want {
				t.Errorf("Compare(%s, %s) = %d, %v; want %d", order[i], order[j], c, ok, want)
			}
		}
	}
	// Build metadata never orders.
	if c, ok := Compare("1.2.0+87", "1.2.0+88"); !ok || c != 0 {
		t.Errorf("build metadata ordered: %d", c)
	}
	if c, ok := Compare("1.2.0", "1.2.0+88"); !ok || c != 0 {
		t.Errorf("build metadata ordered: %d", c)
	}
	if _, ok := Compare("1.2.0", "latest"); ok {
		t.Error("a version that is not semver compared")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1.2.3", "1.0.0-rc.1+b", "0.0.0-0", "1.2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := Parse(s)
		if !ok {
			return
		}
		if v.String() != s {
			t.Fatalf("Parse(%q) round-trips to %q", s, v.String())
		}
		if v.Compare(v) != 0 {
			t.Fatalf("%q does not equal itself", s)
		}
	})
}
