package proc

import "strings"

// allowedEnv lists the variables a plugin child inherits (docs/agent.md); nothing else
// of the agent's environment reaches it.
var allowedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TMP", "TEMP", "LANG", "LC_ALL", "TZ",
	"DBUS_SYSTEM_BUS_ADDRESS",
}

var allowedEnvWindows = []string{"SystemRoot", "windir", "USERPROFILE", "LOCALAPPDATA", "ProgramData", "ComSpec"}

// ChildEnv filters environ (KEY=VALUE entries) down to the allow-list.
func ChildEnv(environ []string, goos string) []string {
	allowed := map[string]bool{}
	for _, k := range allowedEnv {
		allowed[norm(k, goos)] = true
	}
	if goos == "windows" {
		for _, k := range allowedEnvWindows {
			allowed[norm(k, goos)] = true
		}
	}
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if allowed[norm(k, goos)] || strings.HasPrefix(k, "LC_") {
			out = append(out, kv)
		}
	}
	return out
}

// norm folds case on Windows, where environment names are case-insensitive.
func norm(k, goos string) string {
	if goos == "windows" {
		return strings.ToUpper(k)
	}
	return k
}
