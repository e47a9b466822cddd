package store

import (
	"errors"
	"maps"
	"testing"
)

func TestDecode(t *testing.T) {
	ok := []struct {
		in   string
		want map[string]string
	}{
		{"{}", map[string]string{}},
		{" \n{ }\n", map[string]string{}},
		{`{"role": "web", "env": "prod"}`, map[string]string{"role": "web", "env": "prod"}},
		{"{\n  \"a\\\"b\": \"c\\\\d\\u00e9\\n\"\n}", map[string]string{`a"b`: "c\\dé\n"}},
		{`{"a": "1", "a": "2"}`, map[string]string{"a": "2"}},
		{`{"": ""}`, map[string]string{"": ""}},
	}
	for _, c := range ok {
		got, err := Decode([]byte(c.in))
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("Decode(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	bad := []string{"", " ", "null", "[]", `"s"`, "1", "true", `{"a": 1}`, `{"a": null}`, `{"a": true}`,
		`{"a": ["b"]}`, `{"a": {}}`, `{"a": "b"`, `{"a": "b"} {}`, `{"a": "b"},`, "{\"a\": \"\xc3\"}", "\xef\xbb\xbf{}", `{a: "b"}`}
	for _, in := range bad {
		if got, err := Decode([]byte(in)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%q) = %v, %v; want ErrCorrupt", in, got, err)
		}
	}
}

func TestEncode(t *testing.T) {
	cases := []struct {
		in   map[string]string
		want string
	}{
		{nil, "{}"},
		{map[string]string{}, "{}"},
		{map[string]string{"role": "web", "env": "prod"}, "{\n  \"env\": \"prod\",\n  \"role\": \"web\"\n}"},
		{map[string]string{"b": `<&>`, "a": "q\"b\\s\x00\u2028"}, "{\n  \"a\": \"q\\\"b\\\\s\\u0000\\u2028\",\n  \"b\": \"<&>\"\n}"},
	}
	for _, c := range cases {
		got, err := Encode(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("Encode(%v) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzDecode checks that Decode never panics, and that whatever it accepts survives an
// Encode/Decode round trip and encodes the same way twice.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"{}", `{"a": "b"}`, `{"a": 1}`, "null", `{"a|b": "c\\"}`, "{\"\\u00e9\": \"\\n\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tags, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc, err := Encode(tags)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		back, err := Decode(enc)
		if err != nil || !maps.Equal(back, tags) {
			t.Fatalf("round trip of %q: %v, %v", enc, back, err)
		}
		enc2, _ := Encode(back)
		if string(enc2) != string(enc) {
			t.Fatalf("Encode not stable: %q then %q", enc, enc2)
		}
	})
}
