package words

import (
	"reflect"
	"testing"
)

func TestSplitWords(t *testing.T) {
	cases := []struct {
		line string
		want []string
	}{
		{"tags count", []string{"tags", "count"}},
		{"  tags\tcount  ", []string{"tags", "count"}},
		{`filesystem read path='/tmp/a b'`, []string{"filesystem", "read", "path=/tmp/a b"}},
		{`tags set key=k value="say \"hi\" \\ \n"`, []string{"tags", "set", "key=k", `value=say "hi" \ \n`}},
		{`tags set key=k value=a\ b\'c`, []string{"tags", "set", "key=k", "value=a b'c"}},
		{`tags set key=k value=''`, []string{"tags", "set", "key=k", "value="}},
		{`x "a"'b'c`, []string{"x", "abc"}},
		{`x 'it''s'`, []string{"x", "its"}},
		{"", nil},
	}
	for _, c := range cases {
		got, err := Split(c.line)
		if err != nil {
			t.Errorf("Split(%q): %v", c.line, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.line, got, c.want)
		}
	}
	for _, bad := range []string{`x 'open`, `x "open`, `x "esc\"`, `x trailing\`, "x \xff"} {
		if got, err := Split(bad); err == nil {
			t.Errorf("Split(%q) = %q, want an error", bad, got)
		}
	}
}
