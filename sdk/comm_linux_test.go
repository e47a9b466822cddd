package sdk

import "testing"

func TestProcessName(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"/opt/yuzu/plugins/yuzu-plugin-tags"}, "yuzu-plugin-tag"},
		{[]string{"bin/plugins/yuzu-plugin-x"}, "yuzu-plugin-x"},
		{[]string{"short"}, "short"},
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"/"}, ""},
		{[]string{"/p/evil\nname"}, ""},
		{[]string{"/p/caf\xc3\xa9"}, ""},
	}
	for _, c := range cases {
		if got := processName(c.args); got != c.want {
			t.Errorf("processName(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
