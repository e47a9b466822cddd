//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/agent/trust"
)

// TestExecAgentErrors checks the answers to failures of the agent rather than the
// plugin (docs/agent.md), and the plugin's own answer to an unknown action.
func TestExecAgentErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown plugin", []string{"nope", "count"}, agentError("plugin not found: nope")},
		// The contract's unknown-action row has no error| prefix.
		{"unknown action", []string{"tags", "nope"}, "unknown action: nope\n" + undeclared + rc1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w.expect(c.want, 1, c.args...)
		})
	}
	t.Run("plugin dir missing", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "absent")
		r := runAgent(t, nil, "--plugin-dir", missing, "--data-dir", t.TempDir(), "exec", "tags", "count")
		if r.code != 1 || !strings.HasPrefix(r.stdout, "error|plugin dir "+missing+": ") || !strings.HasSuffix(r.stdout, "\n"+undeclared+rc1) {
			t.Errorf("want one error row naming %s, rc 1:\n%s", missing, r)
		}
	})
}

// TestUsageErrors: bad flags or arguments print usage on stderr and exit 2, with
// nothing on stdout.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	dirs := []string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir}
	cases := []struct {
		name    string
		args    []string
		message string
	}{
		{"parameter without =", append(dirs, "exec", "tags", "set", "keyvalue"), `parameter "keyvalue": want key=value`},
		{"parameter with empty key", append(dirs, "exec", "tags", "set", "=v"), `parameter "=v": want key=value`},
		{"parameter given twice", append(dirs, "exec", "tags", "set", "key=a", "key=b"), `parameter "key" given twice`},
		{"definition parameter without =", append(dirs, "exec", "device.tags.get", "key"), `parameter "key": want key=value`},
		{"missing action", append(dirs, "exec", "tags"), "exec tags: missing ACTION"},
		{"exec alone", append(dirs, "exec"), "exec needs PLUGIN ACTION or DEFINITION-ID"},
		{"no command", dirs, "no command given"},
		{"unknown command", append(dirs, "frobnicate"), `unknown command "frobnicate"`},
		{"unknown flag before", append([]string{"--bogus"}, append(dirs, "exec", "tags", "count")...), "unknown flag --bogus"},
		{"unknown flag after", append(dirs, "exec", "tags", "count", "--bogus"), "unknown flag --bogus"},
		{"flag without value", append(dirs, "exec", "tags", "count", "--timeout"), "flag --timeout needs a value"},
		{"negative timeout", append(dirs, "--timeout", "-5", "exec", "tags", "count"), `--timeout "-5": must be positive`},
		{"bad timeout", append(dirs, "--timeout=soon", "exec", "tags", "count"), `--timeout "soon"`},
		{"bad log level", append(dirs, "--log-level", "loud", "exec", "tags", "count"), `--log-level "loud"`},
		{"bad log format", append(dirs, "--log-format", "xml", "exec", "tags", "count"), `--log-format "xml"`},
		{"plugins bad subcommand", append(dirs, "plugins", "frob"), `plugins: unknown subcommand "frob"`},
		{"plugins remove without name", append(dirs, "plugins", "remove"), "plugins remove needs exactly one NAME"},
		{"single-dash flag", append(dirs, "-data-dir", "/d", "exec", "tags", "count"), "flag -data-dir: flags are spelled --name or --name=value"},
		{"triple-dash flag", append(dirs, "---data-dir=/d", "exec", "tags", "count"), "flag ---data-dir=/d: flags are spelled --name or --name=value"},
		{"flag given twice", append(dirs, "exec", "tags", "count", "--data-dir", "/other"), "flag --data-dir given twice"},
		{"empty data dir", []string{"--plugin-dir", "/p", "--data-dir", "", "exec", "tags", "count"}, "--data-dir needs a directory, not an empty value"},
		{"huge timeout", append(dirs, "--timeout", "1e300", "exec", "tags", "count"), `--timeout "1e300": 1e300 seconds is longer than the 168h0m0s maximum`},
		{"huge timeout duration", append(dirs, "--timeout", "9999999h", "exec", "tags", "count"), `--timeout "9999999h": 9999999h is longer than the 168h0m0s maximum`},
		{"NaN timeout", append(dirs, "--timeout", "NaN", "exec", "tags", "count"), `--timeout "NaN": must be positive`},
		{"parameter not UTF-8", append(dirs, "exec", "tags", "set", "key=a\xff"), "argument 8 is not valid UTF-8: key=a\ufffd"},
		{"flag value not UTF-8", append(dirs, "--agent-id", "a\xffb", "exec", "tags", "count"), `flag --agent-id: value is not valid UTF-8`},
		{"plugins add without file", append(dirs, "plugins", "add"), "plugins add needs a FILE"},
		{"describe without plugin", append(dirs, "describe"), "describe needs exactly one PLUGIN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runAgent(t, nil, c.args...)
			if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "yuzu-agent: "+c.message) || !strings.HasSuffix(r.stderr, "\nrun 'yuzu-agent help' for the commands and flags\n") || strings.Contains(r.stderr, "usage: yuzu-agent") {
				t.Errorf("want exit 2, no stdout, %q and the one-line hint (not the whole usage) on stderr:\n%s", c.message, r)
			}
		})
	}
	t.Run("bad YUZU_TIMEOUT", func(t *testing.T) {
		t.Parallel()
		r := runAgent(t, append(baseEnv(), "YUZU_TIMEOUT=0"), append(dirs, "exec", "tags", "count")...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, `--timeout "0": must be positive`) {
			t.Errorf("want exit 2 and the timeout problem on stderr:\n%s", r)
		}
	})
}

// TestGlobalFlags: flags are accepted before and after the subcommand, in both
// --flag value and --flag=value forms, and from YUZU_* variables; a flag beats its
// variable (docs/agent.md).
func TestGlobalFlags(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	w.expect("tag_set|where|here\n"+undeclared, 0, "tags", "set", "key=where", "value=here")
	want := "tag|where|here\n" + undeclared
	wrong := t.TempDir() // an empty dir: plugin not found, empty data
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"before", nil, []string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "exec", "tags", "get", "key=where"}},
		{"after", nil, []string{"exec", "tags", "get", "key=where", "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir}},
		{"between", nil, []string{"exec", "--plugin-dir=" + w.pluginDir, "tags", "--data-dir=" + w.dataDir, "get", "key=where"}},
		{"environment", []string{"YUZU_PLUGIN_DIR=" + w.pluginDir, "YUZU_DATA_DIR=" + w.dataDir}, []string{"exec", "tags", "get", "key=where"}},
		{"flag beats environment", []string{"YUZU_PLUGIN_DIR=" + wrong, "YUZU_DATA_DIR=" + wrong},
			[]string{"exec", "tags", "get", "key=where", "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir}},
		{"other variables", []string{"YUZU_PLUGIN_DIR=" + w.pluginDir, "YUZU_DATA_DIR=" + w.dataDir, "YUZU_TIMEOUT=30s",
			"YUZU_AGENT_ID=agent-7", "YUZU_LOG_LEVEL=error", "YUZU_LOG_FORMAT=json"}, []string{"exec", "tags", "get", "key=where"}},
		{"double dash ends flags", nil, []string{"--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "exec", "--", "tags", "get", "key=where"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if c.env != nil {
				env = append(baseEnv(), c.env...)
			}
			r := runAgent(t, env, c.args...)
			if r.stdout != want || r.code != 0 {
				t.Errorf("got:\n%s\nwant stdout %q", r, want)
			}
		})
	}
	t.Run("version", func(t *testing.T) {
		t.Parallel()
		re := regexp.MustCompile(`^yuzu-agent \S+ \(commit \S+, linux/\w+\)\n$`)
		for _, args := range [][]string{{"--version"}, {"version"}, {"exec", "--version"}} {
			r := runAgent(t, nil, args...)
			if r.code != 0 || !re.MatchString(r.stdout) {
				t.Errorf("%v: want the version line:\n%s", args, r)
			}
		}
	})
	t.Run("help", func(t *testing.T) {
		t.Parallel()
		r := runAgent(t, nil, "--help")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: yuzu-agent") {
			t.Errorf("want usage on stdout, exit 0:\n%s", r)
		}
	})
}

// checksumMismatch stands for the refusal of a binary whose SHA-256 is not the listed
// one; the message names the actual checksum and how to trust the binary.
const checksumMismatch = "(checksum mismatch)"

// TestRefusedBinaries: a plugin binary that may not run is refused with a message
// naming the file, and the command fails with exit 1 (ARCHITECTURE, supervisor
// duties). Others in the same dir still run.
func TestRefusedBinaries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		spoil  func(t *testing.T, dir string) // makes tags unusable
		reason string
	}{
		{"tampered", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, tagsBin), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte{0}); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}, checksumMismatch},
		{"group-writable", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, tagsBin), 0o775); err != nil {
				t.Fatal(err)
			}
		}, "group- or world-writable (mode 0775)"},
		{"world-writable", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, tagsBin), 0o757); err != nil {
				t.Fatal(err)
			}
		}, "group- or world-writable (mode 0757)"},
		{"unlisted", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "catalog.json"), string(catalogOf(map[string]string{sleeperBin: built.sums[sleeperBin]})), 0o644)
		}, "not in catalog.json (add it with `yuzu-agent plugins add`)"},
		{"listed with another checksum", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "catalog.json"), string(catalogOf(map[string]string{tagsBin: built.sums[sleeperBin], sleeperBin: built.sums[sleeperBin]})), 0o644)
		}, checksumMismatch},
		{"no catalog", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "catalog.json")); err != nil {
				t.Fatal(err)
			}
		}, "no catalog.json in the plugin dir (nor a plugins.sha256 to make one from)"},
		{"bad catalog", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "catalog.json"), "{\"format\":1,\"plugins\":{\"tags\":{\"file\":\"../yuzu-plugin-tags\"}}}\n", 0o644)
		}, "unusable catalog: catalog.json: plugin \"tags\": file \"../yuzu-plugin-tags\" is not yuzu-plugin-tags or a build of it in store/tags/"},
		{"bad old manifest", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "catalog.json")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "plugins.sha256"), "not a checksum line\n", 0o644)
		}, "unusable catalog: plugins.sha256 line 1: want `<sha256 hex>  <file name>`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, sleeperBin)
			w.pluginDir = copyPluginDir(t, tagsBin, sleeperBin)
			c.spoil(t, w.pluginDir)
			path := filepath.Join(w.pluginDir, tagsBin)
			reason := c.reason
			if reason == checksumMismatch {
				sum, err := fileSHA256(path)
				if err != nil {
					t.Fatal(err)
				}
				want := built.sums[tagsBin]
				if c.name == "listed with another checksum" {
					want = built.sums[sleeperBin]
				}
				reason = "SHA-256 " + sum + " does not match catalog.json (" + want + "); if you trust this binary, run `yuzu-agent plugins add " + path + "`"
			}
			w.expect(agentError("plugin binary "+path+" refused: "+reason), 1, "tags", "count")
			if c.name == "unlisted" || c.name == "tampered" || c.name == "group-writable" || c.name == "world-writable" {
				w.expect("ok|sleeper\n"+undeclared, 0, "sleeper", "ok")
			}
			if _, err := os.Stat(filepath.Join(w.dataDir, "tags.json")); err == nil {
				t.Errorf("a refused plugin wrote tags.json")
			}
		})
	}
}

// TestJunkInPluginDir: files that are not plugin binaries are ignored, and a
// misnamed or unusable plugin binary does not stop the others.
func TestJunkInPluginDir(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	d := w.pluginDir
	writeFile(t, filepath.Join(d, "README"), "plugins live here\n", 0o644)
	writeFile(t, filepath.Join(d, "random.bin"), "\x7fELF\x00\x01\x02junk", 0o755)
	writeFile(t, filepath.Join(d, "yuzu-plugin-foo-bar"), "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, filepath.Join(d, "yuzu-plugin-tags.tmp.0123456789abcdef"), "half-written", 0o755)
	writeFile(t, filepath.Join(d, "yuzu-plugin-"), "no name", 0o755)
	for _, sub := range []string{"subdir", "yuzu-plugin-adir"} {
		if err := os.Mkdir(filepath.Join(d, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/nonexistent", filepath.Join(d, "dangling")); err != nil {
		t.Fatal(err)
	}
	w.expect("tag_set|k|v\n"+undeclared, 0, "tags", "set", "key=k", "value=v")
	w.expect("tag|k|v\n"+undeclared, 0, "tags", "get", "key=k")
	w.expect(agentError("plugin binary "+filepath.Join(d, "yuzu-plugin-foo-bar")+" refused: plugin name must be 1-64 letters, digits or underscores"), 1, "foo-bar", "x")

	// `plugins` shows every plugin binary with its state; not all are running, so it
	// exits 1.
	r := runAgent(t, nil, "--plugin-dir", d, "--data-dir", w.dataDir, "plugins")
	if r.code != 1 {
		t.Errorf("plugins with refused binaries: want exit 1:\n%s", r)
	}
	rows := tableRows(r.stdout)
	for name, state := range map[string]string{"tags": "running", "foo-bar": "refused", "adir": "refused"} {
		// NAME VERSION PROTOCOL TRUST STATE ...
		if rows[name] == nil || rows[name][4] != state {
			t.Errorf("plugins: want %s %s, have %v\n%s", name, state, rows[name], r.stdout)
		}
	}
	for _, junk := range []string{"README", "random.bin", "subdir", "dangling", "tags.tmp.0123456789abcdef"} {
		if rows[junk] != nil {
			t.Errorf("plugins lists %s, which is not a plugin binary:\n%s", junk, r.stdout)
		}
	}
}

// tableRows splits the `plugins` table into fields, keyed by the NAME column.
func tableRows(out string) map[string][]string {
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 0 {
			rows[f[0]] = f
		}
	}
	return rows
}

// TestPluginsList: `plugins` lists name, version and state of every plugin.
func TestPluginsList(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin, sleeperBin, crasherBin)
	r := runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins")
	if r.code != 0 {
		t.Fatalf("plugins: want exit 0:\n%s", r)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "NAME VERSION PROTOCOL TRUST STATE RESTARTS LAST ERROR MEMORY PEAK/LIMIT TASKS PEAK/LIMIT CPU LIMIT ACTIONS" {
		t.Fatalf("plugins: want a header and three rows:\n%s", r.stdout)
	}
	want := [][]string{
		{"crasher", "0.0.1", "1", "unsigned", "running", "0", "-", "ok,crash,kill,panic,log"},
		{"sleeper", "0.0.1", "1", "unsigned", "running", "0", "-", "ok,sleep,sleep_ctx,rows,env,active,pid"},
		{"tags", "0.1.0", "1", "unsigned", "running", "0", "-", "set,get,get_all,delete,check,clear,count"},
	}
	// The resource columns between LAST ERROR and ACTIONS: a memory peak over the
	// 512 MiB default, a task peak ("-" where the kernel keeps none) over 256, 1 CPU;
	// a limit this machine cannot enforce is "none", and so is each column where it
	// cannot box plugins at all.
	row := regexp.MustCompile(`^(\S+) +(\S+) +(\S+) +(\S+) +(\S+) +(\S+) +(\S+) +(?:(?:[0-9]+ MiB|-)/(?:512 MiB|none)|none) +(?:(?:[0-9]+|-)/(?:256|none)|none) +(?:1|none) +(\S+)$`)
	for i, fields := range want {
		m := row.FindStringSubmatch(lines[i+1])
		if m == nil || strings.Join(m[1:], " ") != strings.Join(fields, " ") {
			t.Errorf("plugins row %d = %q, want %q and the resource columns", i+1, lines[i+1], fields)
		}
	}
	d := runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "describe", "tags")
	for _, want := range []string{
		"name: tags\nversion: 0.1.0\n",
		"\nprotocol: 1\n",
		"\n  set: Sets a tag",
		"\n    support: linux=supported(local_json_store) darwin=supported(local_json_store) windows=supported(local_json_store)\n",
		"\n      key string required maxLength=64 pattern=^[a-zA-Z0-9_.:\\-]+$ — Tag key, at most 64 bytes\n",
		"\n      value string maxLength=448 — ",
		"\n    row: tag_set|key|value\n    columns: key, value\n",
		"\n    row: tag|key|value\n    row: count|count:int32\n    columns: key, value, count:int32\n",
		"\ndefinitions:\n  device.tags.set: tags/set (action, windows,linux,darwin, ttl 60s, auto)\n",
		"\n  device.tags.clear: tags/clear (action, windows,linux,darwin, ttl 60s, role-gated)\n",
	} {
		if d.code != 0 || !strings.Contains(d.stdout, want) {
			t.Errorf("describe tags: want %q in:\n%s", want, d)
		}
	}
	d = runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "describe", "nope")
	if d.code != 1 || !strings.Contains(d.stderr, "plugin not found: nope") {
		t.Errorf("describe nope: want exit 1 and plugin not found:\n%s", d)
	}
}

// TestPluginsAdd: a third-party plugin (the SDK's hello example) is installed with
// `plugins add` and then runs; what is not a working plugin is refused and leaves the
// plugin dir as it was; remove takes it away again.
func TestPluginsAdd(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	elsewhere := filepath.Join(t.TempDir(), helloBin)
	if err := copyFile(binPath(helloBin), elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	w.expect(agentError("plugin not found: hello"), 1, "hello", "greet", "name=x")
	r := runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins", "add", elsewhere)
	sum := built.sums[helloBin]
	build := "hello 1.0.0 (sha256 " + sum[:12] + ")"
	wantOut := "added " + build + " (new), unsigned, 2 actions, 2 definitions\n" +
		"no running agent answers at " + filepath.Join(w.dataDir, "run", "agent.sock") + ": the change takes effect when the plugins next start\n"
	if r.code != 0 || r.stdout != wantOut {
		t.Fatalf("plugins add: want %q:\n%s", wantOut, r)
	}
	cat := readCatalog(t, w.pluginDir)
	dest := filepath.Join(w.pluginDir, "store", "hello", sum[:16], helloBin)
	if e := cat.Entry("hello"); e == nil || e.SHA256 != sum || e.Version != "1.0.0" || e.Protocol != 1 || e.File != "store/hello/"+sum[:16]+"/"+helloBin ||
		e.OS != runtime.GOOS || e.Arch != runtime.GOARCH || e.Publisher != "" || cat.Entry("tags") == nil {
		t.Errorf("catalog after add: %+v", e)
	}
	if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("added binary: %v %v", fi, err)
	}
	w.expect("greeting|Hello, x!\n"+undeclared, 0, "hello", "greet", "name=x")
	w.expect("count|0\n"+undeclared, 0, "tags", "count")

	// The same build again changes nothing.
	r = runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins", "add", elsewhere)
	if r.code != 0 || r.stdout != build+" is installed already\n" {
		t.Errorf("plugins add again:\n%s", r)
	}

	before := readFile(t, filepath.Join(w.pluginDir, "catalog.json"))
	unchanged := func(what string) {
		t.Helper()
		if after := readFile(t, filepath.Join(w.pluginDir, "catalog.json")); after != before {
			t.Errorf("%s changed the catalog:\n%s", what, after)
		}
		if builds, _ := os.ReadDir(filepath.Join(w.pluginDir, "store")); len(builds) != 1 {
			t.Errorf("%s left a build in the store: %v", what, builds)
		}
	}
	// A program that is no yuzu plugin is refused after its trial start.
	fake := filepath.Join(t.TempDir(), "yuzu-plugin-fake")
	if err := copyFile("/bin/true", fake, 0o755); err != nil {
		t.Fatal(err)
	}
	r = runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins", "add", fake)
	if r.code != 1 || !strings.Contains(r.stderr, fake+": the plugin dir is unchanged: yuzu-plugin-fake does not work as a yuzu plugin") {
		t.Errorf("plugins add of a non-plugin: want exit 1 and why:\n%s", r)
	}
	unchanged("a failed add")
	// A script is refused before it runs at all.
	script := filepath.Join(t.TempDir(), "yuzu-plugin-script")
	writeFile(t, script, "#!/bin/sh\nexit 0\n", 0o755)
	r = runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins", "add", script)
	if r.code != 1 || !strings.Contains(r.stderr, "not an executable this agent knows (ELF, PE or Mach-O)") {
		t.Errorf("plugins add of a script:\n%s", r)
	}
	unchanged("a script")
	// A plugin whose definitions disagree with its declarations is refused, naming the
	// field, and leaves nothing behind.
	mm := filepath.Join(t.TempDir(), mismatchBin)
	if err := copyFile(binPath(mismatchBin), mm, 0o755); err != nil {
		t.Fatal(err)
	}
	r = runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins", "add", mm)
	if r.code != 1 || !strings.Contains(r.stderr, "mismatch 0.0.1 cannot be installed:\n  its definitions disagree with its declarations:\n"+
		"  test.mismatch.echo: spec.parameters.name.maxLength: definition says 20, plugin declares 10") {
		t.Errorf("plugins add of a plugin with disagreeing definitions: want exit 1 and the field:\n%s", r)
	}
	unchanged("a refused add")
	// remove stops trusting a plugin and takes its build away.
	r = runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins", "remove", "hello")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "removed "+build+"\n") {
		t.Errorf("plugins remove hello:\n%s", r)
	}
	if _, err := os.Lstat(dest); err == nil || readCatalog(t, w.pluginDir).Entry("hello") != nil {
		t.Error("plugins remove left the build or its entry")
	}
	w.expect(agentError("plugin not found: hello"), 1, "hello", "greet", "name=x")
	r = runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins", "remove", "hello")
	if r.code != 1 || !strings.Contains(r.stderr, "no plugin hello is in") {
		t.Errorf("plugins remove of an unlisted plugin: want exit 1:\n%s", r)
	}
	// A file not named like a plugin binary is refused up front.
	r = runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "plugins", "add", binPath(agentBin))
	if r.code != 1 || !strings.Contains(r.stderr, "a plugin binary's name is yuzu-plugin-NAME") {
		t.Errorf("plugins add of a misnamed file: want exit 1:\n%s", r)
	}
}

// readCatalog reads a plugin dir's catalog.
func readCatalog(t testing.TB, dir string) *trust.Catalog {
	t.Helper()
	c, err := trust.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDescribeFirewallMechanism: `describe firewall` names the mechanism this host
// actually uses, the backend rows the plugin's own state action answers here (which
// firewall that is depends on the machine, so the test compares the two), and a
// plugin without such an action gets no mechanism line.
func TestDescribeFirewallMechanism(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "yuzu-plugin-firewall", tagsBin)
	state := w.exec("firewall", "state")
	var backends []string
	for _, l := range strings.Split(state.stdout, "\n") {
		if b, ok := strings.CutPrefix(l, "backend|"); ok && !slices.Contains(backends, b) {
			backends = append(backends, b)
		}
	}
	if state.code != 0 || len(backends) == 0 {
		t.Fatalf("exec firewall state names no backend:\n%s", state)
	}
	d := runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "describe", "firewall")
	want := "\nprotocol: 1\nvendor: security\nmechanism: " + strings.Join(backends, " + ") + "\nactions:\n"
	if d.code != 0 || !strings.Contains(d.stdout, want) {
		t.Errorf("describe firewall: want %q in:\n%s", want, d)
	}
	if d := runAgent(t, nil, "--plugin-dir", w.pluginDir, "--data-dir", w.dataDir, "describe", "tags"); d.code != 0 || strings.Contains(d.stdout, "mechanism:") {
		t.Errorf("describe tags has a mechanism line:\n%s", d)
	}
}
