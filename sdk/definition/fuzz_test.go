package definition

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and whatever it
// accepts must hold the invariants the agent relies on.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sampleYAML))
	f.Add([]byte(sampleYAML + "---\n" + strings.Replace(sampleYAML, "test.sample.run", "test.sample.two", 1)))
	f.Add([]byte("---\n# only a comment\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("kind: [\n"))
	f.Add([]byte(strings.Replace(sampleYAML, "'ab|cd.*'", "'(?i)[[:alpha:]]{1,3}'", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		defs, err := Parse("fuzz.yaml", data)
		if err != nil {
			if defs != nil {
				t.Fatalf("definitions returned with error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, d := range defs {
			if seen[d.ID] || d.TTL() <= 0 || len(d.Columns) == 0 || len(d.Platforms) == 0 {
				t.Fatalf("accepted a definition that breaks an invariant: %+v", d)
			}
			seen[d.ID] = true
			// Whatever the definition says, validation must answer, not panic; its
			// own defaults must pass its own rules.
			params := map[string]string{}
			for _, p := range d.Parameters {
				if p.Default != nil {
					params[p.Name] = *p.Default
				}
			}
			_ = d.Validate(params)
			for _, p := range d.Parameters {
				if p.Default != nil {
					if _, msg := p.Check(*p.Default); msg != "" {
						t.Fatalf("accepted default %q for %s that fails: %s", *p.Default, p.Name, msg)
					}
				}
			}
		}
	})
}

// FuzzValidate checks device.tags.set against an independent statement of its rules.
func FuzzValidate(f *testing.F) {
	f.Add("env", "prod")
	f.Add("", "")
	f.Add("a b", "x")
	f.Add(strings.Repeat("k", 65), "")
	f.Add("k", strings.Repeat("é", 225))
	f.Add("k\n", "v")
	set, ok := loadFixture(f).Lookup("device.tags.set")
	if !ok {
		f.Fatal("device.tags.set missing")
	}
	keyChar := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.:-", r)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		var want []string
		switch {
		case key == "":
			want = append(want, "missing required parameter: key")
		case len(key) > 64:
			want = append(want, "parameter key: exceeds maxLength 64")
		case strings.IndexFunc(key, func(r rune) bool { return !keyChar(r) }) >= 0:
			want = append(want, "parameter key: does not match pattern")
		}
		// Only the first problem is reported, as the plugin reports it.
		if len(want) == 0 && len(value) > 448 {
			want = append(want, "parameter value: exceeds maxLength 448")
		}
		err := set.Validate(map[string]string{"key": key, "value": value})
		if (err == nil) != (len(want) == 0) {
			t.Fatalf("Validate(key=%q, value of %d bytes) = %v, want problems %q", key, len(value), err, want)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("Validate(key=%q) = %v, want it to contain %q", key, err, w)
			}
		}
	})
}
