package sdk

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Action is a registered action: what the manifest says about it.
type Action struct {
	Name        string
	Description string
	Linux       OSSupport
	Darwin      OSSupport
	Windows     OSSupport
	// Params are the declared parameters, in declaration order.
	Params []Parameter
	// Rows are the kinds of rows the action writes besides `error`.
	Rows []RowKind
	// Columns are the result columns as an InstructionDefinition lists them: the
	// fields after the row kind. Unless set with Columns, they are the Rows' columns
	// one after the other.
	Columns []Column
	// OnlyDeclaredParams refuses a command that carries a parameter the action does
	// not declare, before the handler runs (see OnlyDeclaredParams).
	OnlyDeclaredParams bool
	// MechanismProbe marks the action the agent's describe runs to name the
	// mechanism that answers on this host (see MechanismProbe).
	MechanismProbe bool

	handler    Handler
	columnsSet bool
	err        error // first problem met while applying the options
}

// Param returns the declared parameter called name and whether there is one.
func (a *Action) Param(name string) (*Parameter, bool) {
	for i := range a.Params {
		if a.Params[i].Name == name {
			return &a.Params[i], true
		}
	}
	return nil, false
}

// OS returns the action's support on goos ("linux", "darwin" or "windows").
func (a *Action) OS(goos string) OSSupport {
	switch goos {
	case "linux":
		return a.Linux
	case "darwin":
		return a.Darwin
	case "windows":
		return a.Windows
	}
	return OSSupport{}
}

// checkProbe says what keeps a MechanismProbe action from being one, given the
// actions registered before it.
func (a *Action) checkProbe(before []*Action) error {
	if !slices.ContainsFunc(a.Rows, func(r RowKind) bool { return r.Kind == "backend" }) {
		return fmt.Errorf("a mechanism probe must declare the row kind backend")
	}
	if slices.ContainsFunc(a.Params, func(p Parameter) bool { return p.Required }) {
		return fmt.Errorf("a mechanism probe takes no required parameter")
	}
	if i := slices.IndexFunc(before, func(b *Action) bool { return b.MechanismProbe }); i >= 0 {
		return fmt.Errorf("action %q is already the mechanism probe", before[i].Name)
	}
	return nil
}

// ActionOption sets an optional property of an action.
type ActionOption func(*Action)

// Describe sets the action's description.
func Describe(text string) ActionOption { return func(a *Action) { a.Description = text } }

// Param declares a parameter of the action. The SDK checks it before the handler runs
// and answers `error|<message>` with rc 1 when it fails; see ParamOption for the rules.
func Param(name string, typ Type, description string, opts ...ParamOption) ActionOption {
	return func(a *Action) {
		p := Parameter{Name: name, Type: typ, Description: description}
		for _, o := range opts {
			o(&p)
		}
		if err := p.compile(); err != nil {
			a.fail(err)
			return
		}
		if _, dup := a.Param(name); dup {
			a.fail(fmt.Errorf("parameter %s declared twice", name))
			return
		}
		a.Params = append(a.Params, p)
	}
}

// Row declares a kind of row the action writes: its literal first field and the names
// of the fields after it, each "name" (a string) or "name:type" with type int32, int64
// or bool. Declare kinds in the order the rows usually appear; `error` rows need no
// declaration.
func Row(kind string, columns ...string) ActionOption {
	return func(a *Action) {
		cols, err := parseColumns(columns)
		if err != nil {
			a.fail(fmt.Errorf("row %s: %w", kind, err))
			return
		}
		if kind == "" || slices.ContainsFunc(a.Rows, func(r RowKind) bool { return r.Kind == kind }) {
			a.fail(fmt.Errorf("row kind %q is empty or declared twice", kind))
			return
		}
		a.Rows = append(a.Rows, RowKind{Kind: kind, Columns: cols})
	}
}

// Columns sets the result columns an InstructionDefinition lists for the action, for
// the rare action whose definition does not list its rows' columns one after the
// other. Each is "name" or "name:type", as in Row.
func Columns(columns ...string) ActionOption {
	return func(a *Action) {
		cols, err := parseColumns(columns)
		if err != nil {
			a.fail(err)
			return
		}
		a.Columns, a.columnsSet = cols, true
	}
}

// OnlyDeclaredParams makes the action refuse a command that carries a parameter it
// does not declare: `error|parameter NAME: not declared by action ACTION`, rc 1, before
// the handler runs. Without it an undeclared parameter reaches the handler unchecked,
// upstream's behaviour, which the shipped firewall plugin's contract needs ("any
// parameters supplied are ignored"). A plugin whose later versions add parameters
// should set it: a server that sends the new version's parameter to an agent with the
// old one then gets an error, not an answer that silently ignored it. Plugin's method
// of the same name sets it for every action.
func OnlyDeclaredParams() ActionOption { return func(a *Action) { a.OnlyDeclaredParams = true } }

// MechanismProbe marks the action `yuzu-agent describe` runs to say which mechanism
// answers on this host, where the manifest can only say what each system's leg tries
// first: the action writes one `backend|<name>` row per mechanism it read, so it must
// declare the row kind `backend` and take no required parameter. At most one action
// of a plugin may be marked; describe runs no action that is not. The shipped firewall
// plugin marks its `state`.
func MechanismProbe() ActionOption { return func(a *Action) { a.MechanismProbe = true } }

// OnAll declares the same support on Linux, macOS and Windows.
func OnAll(s OSSupport) ActionOption {
	return func(a *Action) { a.Linux, a.Darwin, a.Windows = s, s, s }
}

// OnLinux declares the action's support on Linux.
func OnLinux(s OSSupport) ActionOption { return func(a *Action) { a.Linux = s } }

// OnDarwin declares the action's support on macOS.
func OnDarwin(s OSSupport) ActionOption { return func(a *Action) { a.Darwin = s } }

// OnWindows declares the action's support on Windows.
func OnWindows(s OSSupport) ActionOption { return func(a *Action) { a.Windows = s } }

func (a *Action) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// DefinitionFile is one YAML file of InstructionDefinitions a plugin ships.
type DefinitionFile struct {
	Name    string
	Content []byte
}

// Plugin is a plugin's identity, its actions and the definitions it ships.
type Plugin struct {
	Name        string
	Version     string
	Description string
	// Vendor is the prefix of the definitions the SDK derives from the declarations:
	// with Vendor "acme", action scan of plugin disk is served as the definition
	// acme.disk.scan, complete with its parameters, columns and platforms, unless a
	// shipped definition runs it. A shipped document with that id only overrides what
	// Go cannot say (description, type, approval, ttl, roles). Empty derives nothing.
	Vendor string

	actions      []*Action
	byName       map[string]*Action
	definitions  []DefinitionFile
	configure    func(ctx context.Context, cfg Config) error
	onlyDeclared bool
}

// OnlyDeclaredParams makes every action of the plugin, registered before or after,
// refuse parameters it does not declare (the action option of the same name).
func (p *Plugin) OnlyDeclaredParams() {
	p.onlyDeclared = true
	for _, a := range p.actions {
		a.OnlyDeclaredParams = true
	}
}

// ValidName reports whether s can be a plugin's name: 1 to 64 ASCII letters, digits
// and underscores. The agent holds every setting that names a plugin to the same rule.
func ValidName(s string) bool {
	// A loop, not a regular expression: `{1,64}` compiles into a program of hundreds
	// of allocations at every process start, a cost each plugin and the agent paid
	// before main (about 0.2 ms each, far more on a cold start).
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// New returns a plugin with no actions. name is a short id of letters, digits and
// underscores; the agent refuses any other.
func New(name, version, description string) *Plugin {
	return &Plugin{Name: name, Version: version, Description: description, byName: map[string]*Action{}}
}

// Handle registers an action. A broken registration (a name used twice, a nil handler,
// a declaration that contradicts itself) panics: it is a programming error that the
// plugin's first test run finds.
func (p *Plugin) Handle(name string, h Handler, opts ...ActionOption) {
	if _, dup := p.byName[name]; dup {
		panic(fmt.Sprintf("sdk: action %q registered twice", name))
	}
	if h == nil {
		panic(fmt.Sprintf("sdk: action %q has a nil handler", name))
	}
	a := &Action{Name: name, handler: h, OnlyDeclaredParams: p.onlyDeclared}
	for _, o := range opts {
		o(a)
	}
	if a.err == nil && a.MechanismProbe {
		a.err = a.checkProbe(p.actions)
	}
	if a.err != nil {
		panic(fmt.Sprintf("sdk: action %q: %v", name, a.err))
	}
	if !a.columnsSet {
		for _, r := range a.Rows {
			a.Columns = append(a.Columns, r.Columns...)
		}
	}
	p.actions = append(p.actions, a)
	p.byName[name] = a
}

// Definitions ships the InstructionDefinitions in fsys with the plugin: every *.yaml
// file in directory dir of fsys, in name order, as ReadDefinitionFiles reads them.
// Embed them with go:embed:
//
//	//go:embed definitions/*.yaml
//	var definitions embed.FS
//	...
//	p.Definitions(definitions, "definitions")
//
// dir is the directory inside fsys that holds the files ("." for the root). The agent
// reads them from the running plugin, so a plugin and its definitions always ship and
// version together. Reading them panics on error: an embedded file system cannot fail.
func (p *Plugin) Definitions(fsys fs.FS, dir string) {
	files, err := ReadDefinitionFiles(fsys, dir)
	if err != nil {
		panic("sdk: " + err.Error())
	}
	p.definitions = append(p.definitions, files...)
}

// ReadDefinitionFiles reads every *.yaml file in directory dir of fsys ("." for the
// root), in name order, each named by its base name. Finding none is an error: a
// plugin or a tool pointed at a directory of definitions expects some there.
func ReadDefinitionFiles(fsys fs.FS, dir string) ([]DefinitionFile, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("definitions: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("definitions: no *.yaml files in %q", dir)
	}
	slices.Sort(names)
	files := make([]DefinitionFile, 0, len(names))
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("definitions: %w", err)
		}
		files = append(files, DefinitionFile{Name: path.Base(n), Content: data})
	}
	return files, nil
}

// OnConfigure sets a function called when the agent configures the plugin, before
// any command. An error fails the plugin's start; the agent reports it.
func (p *Plugin) OnConfigure(f func(ctx context.Context, cfg Config) error) { p.configure = f }

// DefinitionFiles returns the definition files the plugin ships.
func (p *Plugin) DefinitionFiles() []DefinitionFile {
	return slices.Clone(p.definitions)
}

// Actions returns the registered actions in registration order.
func (p *Plugin) Actions() []Action {
	out := make([]Action, len(p.actions))
	for i, a := range p.actions {
		out[i] = *a
	}
	return out
}

// Validate reports what is wrong with the plugin's identity, if anything.
func (p *Plugin) Validate() error {
	if !ValidName(p.Name) {
		return fmt.Errorf("plugin name %q: want 1-64 letters, digits or underscores", p.Name)
	}
	if strings.TrimSpace(p.Version) == "" {
		return fmt.Errorf("plugin %s: empty version", p.Name)
	}
	if len(p.actions) == 0 {
		return fmt.Errorf("plugin %s: no actions", p.Name)
	}
	return nil
}
