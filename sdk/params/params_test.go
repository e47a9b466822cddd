package params

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestGetAbsentVersusEmpty(t *testing.T) {
	p := New(map[string]string{"empty": "", "set": "v"})
	cases := []struct {
		key, def, want string
		has            bool
	}{
		{"absent", "dflt", "dflt", false},
		{"empty", "dflt", "", true},
		{"set", "dflt", "v", true},
	}
	for _, c := range cases {
		if got := p.Get(c.key, c.def); got != c.want {
			t.Errorf("Get(%q, %q) = %q, want %q", c.key, c.def, got, c.want)
		}
		if got := p.Has(c.key); got != c.has {
			t.Errorf("Has(%q) = %v, want %v", c.key, got, c.has)
		}
		v, ok := p.Lookup(c.key)
		if ok != c.has || (ok && v != c.want) {
			t.Errorf("Lookup(%q) = %q, %v", c.key, v, ok)
		}
	}
}

func TestNilMap(t *testing.T) {
	p := New(nil)
	if p.Get("x", "d") != "d" || p.Has("x") || p.Len() != 0 || len(p.Keys()) != 0 || len(p.Map()) != 0 {
		t.Errorf("a nil map must behave as an empty one")
	}
	if _, err := p.Required("x"); err == nil {
		t.Errorf("Required on a nil map succeeded")
	}
}

func TestBool(t *testing.T) {
	cases := []struct {
		val     string
		present bool
		def     bool
		want    bool
	}{
		{"", false, true, true},
		{"", false, false, false},
		{"true", true, false, true},
		{"", true, true, false},
		{"TRUE", true, false, false},
		{"True", true, false, false},
		{"1", true, false, false},
		{"yes", true, false, false},
		{" true", true, false, false},
		{"false", true, true, false},
	}
	for _, c := range cases {
		m := map[string]string{}
		if c.present {
			m["b"] = c.val
		}
		if got := New(m).Bool("b", c.def); got != c.want {
			t.Errorf("Bool(b=%q present=%v, def %v) = %v, want %v", c.val, c.present, c.def, got, c.want)
		}
	}
}

func TestInt(t *testing.T) {
	p := New(map[string]string{"n": " 42x", "bad": "x", "empty": ""})
	cases := []struct {
		key    string
		want   int
		wantOK bool
	}{
		{"n", 42, true},
		{"bad", 7, false},
		{"empty", 7, false},
		{"absent", 7, false},
	}
	for _, c := range cases {
		if got, ok := p.Int(c.key, 7); got != c.want || ok != c.wantOK {
			t.Errorf("Int(%q, 7) = %d, %v; want %d, %v", c.key, got, ok, c.want, c.wantOK)
		}
	}
}

func TestRequired(t *testing.T) {
	p := New(map[string]string{"path": "/x", "empty": ""})
	if v, err := p.Required("path"); err != nil || v != "/x" {
		t.Errorf("Required(path) = %q, %v", v, err)
	}
	for _, key := range []string{"empty", "absent"} {
		_, err := p.Required(key)
		if err == nil {
			t.Fatalf("Required(%q) succeeded", key)
		}
		if want := "missing required parameter: " + key; err.Error() != want {
			t.Errorf("Required(%q) error %q, want %q", key, err, want)
		}
		if !errors.Is(err, ErrMissing) {
			t.Errorf("Required(%q) error does not wrap ErrMissing", key)
		}
	}
}

func TestKeysAndMap(t *testing.T) {
	src := map[string]string{"b": "2", "a": "1", "c": ""}
	p := New(src)
	if got := strings.Join(p.Keys(), ","); got != "a,b,c" {
		t.Errorf("Keys() = %s, want a,b,c", got)
	}
	if p.Len() != 3 {
		t.Errorf("Len() = %d", p.Len())
	}
	m := p.Map()
	m["a"] = "changed"
	if p.Get("a", "") != "1" {
		t.Errorf("Map() returned the underlying map, not a copy")
	}
}

func TestStoi(t *testing.T) {
	cases := []struct {
		in   string
		want int
		err  error
	}{
		{"0", 0, nil},
		{"12", 12, nil},
		{"12abc", 12, nil},
		{"  -7", -7, nil},
		{"+3", 3, nil},
		{"-0", 0, nil},
		{"007", 7, nil},
		{"\t\n\v\f\r 5", 5, nil},
		{" +12 34", 12, nil},
		{"2147483647", 2147483647, nil},
		{"-2147483648", -2147483648, nil},
		{"0000000000000000000002147483647", 2147483647, nil},
		{"2147483648", 0, ErrOutOfRange},
		{"-2147483649", 0, ErrOutOfRange},
		{"99999999999999999999999999999999999999", 0, ErrOutOfRange},
		{"-99999999999999999999999999999999999999x", 0, ErrOutOfRange},
		{"abc", 0, ErrNoDigits},
		{"", 0, ErrNoDigits},
		{"   ", 0, ErrNoDigits},
		{"+", 0, ErrNoDigits},
		{"-", 0, ErrNoDigits},
		{"+-3", 0, ErrNoDigits},
		{"- 3", 0, ErrNoDigits},
		{"\u00a05", 0, ErrNoDigits}, // a non-breaking space is not C whitespace
		{"x12", 0, ErrNoDigits},
		{"١٢", 0, ErrNoDigits}, // Arabic-Indic digits are not ASCII digits
	}
	for _, c := range cases {
		got, err := Stoi(c.in)
		if !errors.Is(err, c.err) || (err == nil && got != c.want) {
			t.Errorf("Stoi(%q) = %d, %v; want %d, %v", c.in, got, err, c.want, c.err)
		}
	}
}

// refStoi is a second implementation of Stoi for the fuzz target: it cuts out the
// sign and digit run by hand and lets strconv judge the number.
func refStoi(s string) (int, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(s)
	}
	if end == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(sign+s[:end], 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

func FuzzStoi(f *testing.F) {
	for _, s := range []string{"12abc", "  -7", "+3", "abc", "", "2147483647", "2147483648", "-2147483648", "\v\f9", "+", strings.Repeat("9", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Stoi(s)
		want, ok := refStoi(s)
		if (err == nil) != ok || got != want {
			t.Fatalf("Stoi(%q) = %d, %v; reference says %d, ok=%v", s, got, err, want, ok)
		}
	})
}
