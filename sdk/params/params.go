// Package params gives actions their parameters with the contract's semantics.
//
// Parameters travel as a flat string-to-string map. A key that is absent gives the
// caller's default; a key that is present with an empty value gives the empty string,
// not the default. Booleans are true only for the exact string "true". Integers are
// read like C++ std::stoi: leading whitespace, an optional sign, the longest run of
// digits, trailing junk ignored, and a failure when there are no digits or the number
// does not fit in a 32-bit int.
package params

import (
	"errors"
	"math"
	"sort"
)

// Params is a read-only view of one command's parameters.
type Params struct {
	m map[string]string
}

// New wraps m. The map is not copied; callers must not change it afterwards.
func New(m map[string]string) Params { return Params{m: m} }

// Get returns the value of key, or def when key is absent. A present empty value is
// returned as the empty string.
func (p Params) Get(key, def string) string {
	if v, ok := p.m[key]; ok {
		return v
	}
	return def
}

// Lookup returns the value of key and whether it was present.
func (p Params) Lookup(key string) (string, bool) {
	v, ok := p.m[key]
	return v, ok
}

// Has reports whether key is present, even with an empty value.
func (p Params) Has(key string) bool {
	_, ok := p.m[key]
	return ok
}

// Bool returns def when key is absent, otherwise whether the value is exactly "true".
func (p Params) Bool(key string, def bool) bool {
	v, ok := p.m[key]
	if !ok {
		return def
	}
	return v == "true"
}

// Int returns the value of key read like std::stoi, and whether it was read. An absent
// key or a value that does not parse gives def and false; what that means is up to the
// action (usually "keep the default").
func (p Params) Int(key string, def int) (int, bool) {
	v, ok := p.m[key]
	if !ok {
		return def, false
	}
	n, err := Stoi(v)
	if err != nil {
		return def, false
	}
	return n, true
}

// ErrMissing is wrapped by Required when a required parameter is absent or empty.
var ErrMissing = errors.New("missing required parameter")

// Required returns the value of key, or an error whose text is the contract's
// "missing required parameter: <key>" when the key is absent or empty.
func (p Params) Required(key string) (string, error) {
	v := p.m[key]
	if v == "" {
		return "", &missingError{key: key}
	}
	return v, nil
}

type missingError struct{ key string }

func (e *missingError) Error() string { return ErrMissing.Error() + ": " + e.key }
func (e *missingError) Unwrap() error { return ErrMissing }

// Keys returns the parameter names in sorted order.
func (p Params) Keys() []string {
	keys := make([]string, 0, len(p.m))
	for k := range p.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Len is the number of parameters.
func (p Params) Len() int { return len(p.m) }

// Map returns a copy of the parameters.
func (p Params) Map() map[string]string {
	m := make(map[string]string, len(p.m))
	for k, v := range p.m {
		m[k] = v
	}
	return m
}

// Errors returned by Stoi.
var (
	ErrNoDigits   = errors.New("no digits")
	ErrOutOfRange = errors.New("out of int range")
)

// Stoi parses s like C++ std::stoi with base 10 and a 32-bit int.
func Stoi(s string) (int, error) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var n int64
	overflow := false
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if !overflow {
			n = n*10 + int64(s[i]-'0')
			if n > math.MaxInt32+1 {
				overflow = true
			}
		}
		i++
	}
	if i == start {
		return 0, ErrNoDigits
	}
	if neg {
		n = -n
	}
	if overflow || n > math.MaxInt32 || n < math.MinInt32 {
		return 0, ErrOutOfRange
	}
	return int(n), nil
}

// isSpace matches C's isspace in the "C" locale.
func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}
