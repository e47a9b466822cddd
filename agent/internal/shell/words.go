package shell

import (
	"slices"
	"strings"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/definition"
	"github.com/yuzugo/yuzu/sdk/host"
)

// metaCommands are the shell's own commands, as completion offers them.
var metaCommands = []string{".describe", ".help", ".output", ".plugins", ".quit"}

// declared is what completion knows: the plugins' names and manifests and every
// definition the agent can run (workflows and served ones). A plugin that has not
// answered yet has no manifest; completion then offers its name only.
type declared struct {
	plugins   []string
	manifests map[string]host.Manifest
	defs      []definition.Definition
	formats   []string // what .output takes
}

// complete finishes the word before pos in line (a Tab press): the plugin or
// definition id first, then the action, then parameter names (with their `=`) and,
// after `name=`, a declared enum's values. One candidate replaces the word (with a
// blank after it unless it ends in `=`); several extend it to their common prefix,
// and when that adds nothing they are returned as choices to show. ok is false when
// nothing matches.
func (d *declared) complete(line string, pos int) (newLine string, newPos int, choices []string, ok bool) {
	if pos < 0 || pos > len(line) {
		return line, pos, nil, false
	}
	prefix, suffix := line[:pos], line[pos:]
	start := strings.LastIndexAny(prefix, " \t") + 1
	word := prefix[start:]
	before := strings.Fields(prefix[:start])
	candidates := d.candidates(before, word)
	var matches []string
	for _, c := range candidates {
		if strings.HasPrefix(c, word) {
			matches = append(matches, c)
		}
	}
	slices.Sort(matches)
	matches = slices.Compact(matches)
	switch len(matches) {
	case 0:
		return line, pos, nil, false
	case 1:
		done := matches[0]
		if !strings.HasSuffix(done, "=") && !strings.HasPrefix(suffix, " ") {
			done += " "
		}
		return prefix[:start] + done + suffix, start + len(done), nil, true
	}
	common := matches[0]
	for _, m := range matches[1:] {
		for !strings.HasPrefix(m, common) {
			common = common[:len(common)-1]
		}
	}
	if len(common) > len(word) {
		return prefix[:start] + common + suffix, start + len(common), nil, true
	}
	return line, pos, matches, true
}

// candidates lists what may stand as the next word after the words before it.
func (d *declared) candidates(before []string, word string) []string {
	if len(before) == 0 {
		if strings.HasPrefix(word, ".") {
			return metaCommands
		}
		out := slices.Clone(d.plugins)
		for _, def := range d.defs {
			out = append(out, def.ID)
		}
		return out
	}
	first := before[0]
	switch {
	case first == ".describe":
		if len(before) == 1 {
			return d.plugins
		}
		return nil
	case first == ".output":
		if len(before) == 1 {
			return d.formats
		}
		return nil
	case strings.HasPrefix(first, "."):
		return nil
	case strings.Contains(first, "."):
		for _, def := range d.defs {
			if def.ID == first {
				return paramCandidates(def.Parameters, before[1:], word)
			}
		}
		return nil
	}
	m, known := d.manifests[first]
	if !known {
		return nil
	}
	if len(before) == 1 {
		var out []string
		for _, a := range m.Actions {
			out = append(out, a.Name)
		}
		return out
	}
	if a, ok := m.Action(before[1]); ok {
		return paramCandidates(a.Params, before[2:], word)
	}
	return nil
}

// paramCandidates offers `name=` for each declared parameter not given yet, or, when
// the word already names one (`name=...`), `name=VALUE` for each of its enum values.
func paramCandidates(params []sdk.Parameter, given []string, word string) []string {
	if name, _, has := strings.Cut(word, "="); has {
		for _, p := range params {
			if p.Name == name {
				var out []string
				for _, v := range p.Enum {
					out = append(out, name+"="+v)
				}
				return out
			}
		}
		return nil
	}
	var out []string
	for _, p := range params {
		if !slices.ContainsFunc(given, func(g string) bool { return strings.HasPrefix(g, p.Name+"=") }) {
			out = append(out, p.Name+"=")
		}
	}
	return out
}
