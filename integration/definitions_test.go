//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/definitions"
)

// TestDefinitionsMatchPlugins: every definition names an action its plugin really has
// (checked against the running plugin's Describe manifest), and every action of the
// tags plugin has a definition.
func TestDefinitionsMatchPlugins(t *testing.T) {
	t.Parallel()
	cat, err := definitions.Load()
	if err != nil {
		t.Fatal(err)
	}
	all := cat.All()
	if len(all) == 0 {
		t.Fatal("no definitions")
	}
	var plugins []string
	for _, d := range all {
		if !slices.Contains(plugins, d.Plugin) {
			plugins = append(plugins, d.Plugin)
		}
	}
	if !slices.Contains(plugins, "tags") {
		t.Fatalf("no definition for the tags plugin among %v", plugins)
	}
	// Plugins other than tags are built here, only if a definition names them.
	dir := pluginDir(t, tagsBin)
	var manifest []byte
	for _, p := range plugins {
		if p == "tags" {
			continue
		}
		file := supervisor.BinaryPrefix + p
		pkg := "./plugin-" + p
		if _, err := os.Stat(filepath.Join(built.root, pkg)); err != nil {
			t.Errorf("definitions name plugin %s, but there is no %s to build it from", p, pkg)
			continue
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, file), pkg)
		cmd.Dir = built.root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go build %s: %v\n%s", pkg, err, out)
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, sum+"  "+file+"\n"...)
	}
	if len(manifest) > 0 {
		old := readFile(t, filepath.Join(dir, "plugins.sha256"))
		writeFile(t, filepath.Join(dir, "plugins.sha256"), old+string(manifest), 0o644)
	}
	s := newSupervisor(t, supervisor.Options{PluginDir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actions := map[string][]string{}
	for _, p := range plugins {
		m, err := s.Describe(ctx, p)
		if err != nil {
			t.Errorf("describe %s: %v", p, err)
			continue
		}
		for _, a := range m.Actions {
			actions[p] = append(actions[p], a.Name)
		}
	}
	checked := 0
	for _, d := range all {
		if have, ok := actions[d.Plugin]; ok {
			checked++
			if !slices.Contains(have, d.Action) {
				t.Errorf("definition %s (%s): plugin %s has no action %s (it has %v)", d.ID, d.Source, d.Plugin, d.Action, have)
			}
		}
	}
	if checked == 0 {
		t.Error("no definition was checked against a plugin")
	}
	defined := map[string]bool{}
	for _, d := range cat.ForPlugin("tags") {
		defined[d.Action] = true
	}
	if len(actions["tags"]) != 7 {
		t.Errorf("tags actions = %v, want the 7 of the contract", actions["tags"])
	}
	for _, a := range actions["tags"] {
		if !defined[a] {
			t.Errorf("tags action %s has no definition", a)
		}
	}
	t.Logf("checked %d definitions against %d plugins", checked, len(actions))
}
