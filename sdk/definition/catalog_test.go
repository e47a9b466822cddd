package definition

import (
	"os"
	"testing"
)

// loadFixture parses testdata/tags.yaml, a frozen copy of a real plugin's definitions.
func loadFixture(t testing.TB) *Catalog {
	t.Helper()
	defs, err := ParseFS(os.DirFS("testdata"), ".")
	if err != nil {
		t.Fatalf("ParseFS(testdata): %v", err)
	}
	c, err := NewCatalog(defs)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	return c
}

func mustLoad(t *testing.T) *Catalog { return loadFixture(t) }

func TestAllSortedAndUnique(t *testing.T) {
	all := mustLoad(t).All()
	if len(all) == 0 {
		t.Fatal("embedded catalogue is empty")
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID >= all[i].ID {
			t.Errorf("All() not strictly sorted: %s before %s", all[i-1].ID, all[i].ID)
		}
	}
}

func TestLookup(t *testing.T) {
	c := mustLoad(t)
	cases := []struct {
		id string
		ok bool
	}{
		{"device.tags.set", true},
		{"device.tags.clear", true},
		{"device.tags.nope", false},
		{"", false},
		{"DEVICE.TAGS.SET", false},
	}
	for _, tc := range cases {
		d, ok := c.Lookup(tc.id)
		if ok != tc.ok || (ok && d.ID != tc.id) || (!ok && d.ID != "") {
			t.Errorf("Lookup(%q) = %q, %v; want found=%v", tc.id, d.ID, ok, tc.ok)
		}
	}
	if got := c.ForPlugin("nope"); got == nil || len(got) != 0 {
		t.Errorf("ForPlugin(nope) = %#v, want an empty slice", got)
	}
}

// A caller that edits what it got must not change what the next caller gets.
func TestReturnedDefinitionsAreCopies(t *testing.T) {
	c := mustLoad(t)
	d, _ := c.Lookup("device.tags.set")
	d.Platforms[0] = "plan9"
	*d.Parameters[0].MaxLength = 1
	d.Parameters[0].Name = "renamed"
	d.Columns[0].Name = "renamed"
	for _, all := range [][]Definition{c.All(), c.ForPlugin("tags")} {
		for _, a := range all {
			if a.ID != "device.tags.set" {
				continue
			}
			a.ExecuteRoles[0] = "nobody"
		}
	}
	again, _ := c.Lookup("device.tags.set")
	if again.Platforms[0] != "windows" || *again.Parameters[0].MaxLength != 64 || again.Parameters[0].Name != "key" ||
		again.Columns[0].Name != "key" || again.ExecuteRoles[0] != "endpoint-admin" {
		t.Errorf("catalogue changed through a returned copy: %+v", again)
	}
	if err := again.Validate(map[string]string{"key": "ab"}); err != nil {
		t.Errorf("Validate after copies were edited: %v", err)
	}
}
