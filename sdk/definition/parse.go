package definition

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// The raw* types mirror the YAML nesting one to one. They exist so that the decoder can
// refuse unknown fields (Parse flattens them into Definition) and so that Marshal writes
// the same nesting back; omitempty only shortens what Marshal writes.
type rawDoc struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Metadata   rawMetadata `yaml:"metadata"`
	Spec       rawSpec     `yaml:"spec"`
	Status     rawStatus   `yaml:"status,omitempty"`
}

type rawMetadata struct {
	ID          string   `yaml:"id"`
	DisplayName string   `yaml:"displayName"`
	Version     string   `yaml:"version"`
	Description string   `yaml:"description,omitempty"`
	Tags        []string `yaml:"tags,omitempty"`
}

type rawSpec struct {
	Type            string           `yaml:"type"`
	Platforms       []string         `yaml:"platforms"`
	Execution       rawExecution     `yaml:"execution"`
	Parameters      *rawParameters   `yaml:"parameters,omitempty"`
	Result          rawResult        `yaml:"result"`
	ReadablePayload string           `yaml:"readablePayload,omitempty"`
	Gather          rawGather        `yaml:"gather"`
	Approval        rawApproval      `yaml:"approval"`
	Permissions     rawPermissions   `yaml:"permissions,omitempty"`
	Compatibility   rawCompatibility `yaml:"compatibility,omitempty"`
}

type rawExecution struct {
	Plugin      string `yaml:"plugin"`
	Action      string `yaml:"action"`
	Concurrency string `yaml:"concurrency,omitempty"`
}

type rawParameters struct {
	Type       string                 `yaml:"type"`
	Required   []string               `yaml:"required,omitempty"`
	Properties map[string]rawProperty `yaml:"properties"`
}

type rawProperty struct {
	Type        string        `yaml:"type"`
	DisplayName string        `yaml:"displayName,omitempty"`
	Description string        `yaml:"description,omitempty"`
	Default     yaml.Node     `yaml:"default,omitempty"`
	Validation  rawValidation `yaml:"validation,omitempty"`
}

type rawValidation struct {
	MaxLength *int     `yaml:"maxLength,omitempty"`
	MinLength *int     `yaml:"minLength,omitempty"`
	Pattern   string   `yaml:"pattern,omitempty"`
	Enum      []string `yaml:"enum,omitempty"`
	Minimum   *int64   `yaml:"minimum,omitempty"`
	Maximum   *int64   `yaml:"maximum,omitempty"`
}

type rawResult struct {
	Columns []rawColumn `yaml:"columns"`
}

type rawColumn struct {
	Name string `yaml:"name"`
	Type string `yaml:"type"`
}

type rawGather struct {
	TTLSeconds int `yaml:"ttlSeconds"`
}

type rawApproval struct {
	Mode string `yaml:"mode"`
}

type rawPermissions struct {
	ExecuteRoles []string `yaml:"executeRoles,omitempty"`
	AuthorRoles  []string `yaml:"authorRoles,omitempty"`
}

type rawCompatibility struct {
	MinAgentVersion string   `yaml:"minAgentVersion,omitempty"`
	RequiredPlugins []string `yaml:"requiredPlugins,omitempty"`
}

type rawStatus struct {
	Phase string `yaml:"phase,omitempty"`
}

var (
	// idShape is the plugin-family id: lowercase dot-separated words, at least two
	// (device.tags.get, workflow.config_search_and_replace).
	idShape = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
	// nameShape covers plugin, action, parameter and column names. It keeps out '=',
	// spaces and '$', which would break `exec ID key=value` and ${param} templates.
	nameShape = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	// unknownField rewrites yaml's "field x not found in type definitions.rawSpec",
	// which names our private Go types, into words about the file.
	unknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)
	// privateType catches the other messages that would name one of our raw* types;
	// each of them is a YAML mapping.
	privateType = regexp.MustCompile(`into definition\.raw\w+`)
)

// maxIDLength bounds metadata.id; ids travel in URLs and logs.
const maxIDLength = 128

// Parse reads data, a stream of YAML documents, as InstructionDefinitions and checks
// each one. name is used only in error messages (normally the file name). Documents
// that are empty or hold only comments are skipped. Decoding is strict: an unknown
// field, a wrong scalar type or a duplicate key is an error, and so is a repeated
// metadata.id within data. Every problem found is reported, one per line, as
// "<name>: document <n> (<id>): <field>: <problem>", where n counts the documents of
// the stream from 1. On any error Parse returns no definitions.
func Parse(name string, data []byte) (defs []Definition, err error) {
	defer func() {
		// The YAML library is not ours; whatever it does with hostile input, the
		// caller gets an error rather than a crashed agent.
		if r := recover(); r != nil {
			defs, err = nil, fmt.Errorf("%s: internal error while parsing: %v", name, r)
		}
	}()

	// Two decoders walk the same stream in step: the node decoder tells an empty
	// document (only comments, or a stray ---) from a real one, and the strict
	// decoder fills the typed document with KnownFields on.
	nodes := yaml.NewDecoder(bytes.NewReader(data))
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)

	var problems []error
	seen := map[string]int{}
	for index := 1; ; index++ {
		var node yaml.Node
		if err := nodes.Decode(&node); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			// A syntax error leaves the YAML parser unable to find the next document.
			problems = append(problems, fmt.Errorf("%s: document %d: %s", name, index, cleanYAMLError(err)))
			break
		}
		var raw rawDoc
		strictErr := strict.Decode(&raw)
		if isEmptyDocument(&node) {
			continue
		}
		where := docLabel(name, index, raw.Metadata.ID)
		if strictErr != nil {
			problems = append(problems, fmt.Errorf("%s: %s", where, cleanYAMLError(strictErr)))
			var typeErr *yaml.TypeError
			if !errors.As(strictErr, &typeErr) {
				break
			}
			continue
		}
		def, errs := build(raw)
		for _, e := range errs {
			problems = append(problems, fmt.Errorf("%s: %s", where, e))
		}
		if len(errs) > 0 {
			continue
		}
		if first, dup := seen[def.ID]; dup {
			problems = append(problems, fmt.Errorf("%s: metadata.id: duplicate id, first defined in document %d", where, first))
			continue
		}
		seen[def.ID] = index
		def.Source = fmt.Sprintf("%s: document %d", name, index)
		defs = append(defs, def)
	}
	if len(problems) == 0 && len(defs) == 0 {
		problems = append(problems, fmt.Errorf("%s: no definitions", name))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return defs, nil
}

// docLabel names a document for an error message.
func docLabel(name string, index int, id string) string {
	if id == "" {
		return fmt.Sprintf("%s: document %d", name, index)
	}
	return fmt.Sprintf("%s: document %d (%s)", name, index, id)
}

// isEmptyDocument reports whether a decoded document holds nothing but a null.
func isEmptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// cleanYAMLError turns the YAML library's multi-line message into one line that
// talks about fields rather than Go types.
func cleanYAMLError(err error) string {
	var typeErr *yaml.TypeError
	if errors.As(err, &typeErr) {
		parts := make([]string, len(typeErr.Errors))
		for i, e := range typeErr.Errors {
			e = unknownField.ReplaceAllString(e, `unknown field "$1"`)
			parts[i] = privateType.ReplaceAllString(e, "where a mapping is expected")
		}
		return strings.Join(parts, "; ")
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// build checks one decoded document and flattens it. It returns every problem it
// finds, each prefixed with the YAML path of the field at fault.
func build(raw rawDoc) (Definition, []error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}

	if raw.APIVersion != APIVersion {
		bad("apiVersion", "must be %s, got %q", APIVersion, raw.APIVersion)
	}
	if raw.Kind != Kind {
		bad("kind", "must be %s, got %q", Kind, raw.Kind)
	}

	m := raw.Metadata
	switch {
	case m.ID == "":
		bad("metadata.id", "required")
	case len(m.ID) > maxIDLength || !idShape.MatchString(m.ID):
		bad("metadata.id", "%q is not lowercase dot-separated words such as device.tags.get", m.ID)
	}
	if strings.TrimSpace(m.DisplayName) == "" {
		bad("metadata.displayName", "required")
	}
	if !semver.Valid(m.Version) {
		bad("metadata.version", "must be a semantic version such as 0.1.0, got %q", m.Version)
	}

	s := raw.Spec
	if s.Type != TypeQuestion && s.Type != TypeAction {
		bad("spec.type", "must be %s or %s, got %q", TypeQuestion, TypeAction, s.Type)
	}
	if len(s.Platforms) == 0 {
		bad("spec.platforms", "must name at least one of %s", strings.Join(Platforms, ", "))
	}
	for i, p := range s.Platforms {
		if !slices.Contains(Platforms, p) {
			bad("spec.platforms", "unknown platform %q (allowed: %s)", p, strings.Join(Platforms, ", "))
		} else if slices.Contains(s.Platforms[:i], p) {
			bad("spec.platforms", "%q listed twice", p)
		}
	}
	checkName := func(field, v string) {
		switch {
		case v == "":
			bad(field, "required")
		case !nameShape.MatchString(v):
			bad(field, "%q is not a valid name (letters, digits, _ . -)", v)
		}
	}
	checkName("spec.execution.plugin", s.Execution.Plugin)
	checkName("spec.execution.action", s.Execution.Action)

	params, perrs := buildParameters(s.Parameters)
	errs = append(errs, perrs...)

	if len(s.Result.Columns) == 0 {
		bad("spec.result.columns", "must list at least one column")
	}
	columns := make([]Column, 0, len(s.Result.Columns))
	for i, c := range s.Result.Columns {
		field := fmt.Sprintf("spec.result.columns[%d]", i)
		checkName(field+".name", c.Name)
		if !isValueType(c.Type) {
			bad(field+".type", "must be string, int32, int64 or bool, got %q", c.Type)
		}
		if slices.ContainsFunc(s.Result.Columns[:i], func(o rawColumn) bool { return o.Name == c.Name }) {
			bad(field+".name", "column %q listed twice", c.Name)
		}
		columns = append(columns, Column{Name: c.Name, Type: sdk.Type(c.Type)})
	}

	if s.Gather.TTLSeconds <= 0 {
		bad("spec.gather.ttlSeconds", "must be greater than 0, got %d", s.Gather.TTLSeconds)
	}
	if s.Approval.Mode != ApprovalAuto && s.Approval.Mode != ApprovalRoleGated {
		bad("spec.approval.mode", "must be %s or %s, got %q", ApprovalAuto, ApprovalRoleGated, s.Approval.Mode)
	}
	if v := s.Compatibility.MinAgentVersion; v != "" && !semver.Valid(v) {
		bad("spec.compatibility.minAgentVersion", "must be a semantic version such as 0.1.0, got %q", v)
	}
	for i, r := range s.Compatibility.RequiredPlugins {
		if _, err := ParseRequirement(r); err != nil {
			bad(fmt.Sprintf("spec.compatibility.requiredPlugins[%d]", i), "%v", err)
		}
	}

	if len(errs) > 0 {
		return Definition{}, errs
	}
	return Definition{
		ID:              m.ID,
		DisplayName:     m.DisplayName,
		Version:         m.Version,
		Description:     m.Description,
		Tags:            m.Tags,
		Type:            s.Type,
		Platforms:       s.Platforms,
		Plugin:          s.Execution.Plugin,
		Action:          s.Execution.Action,
		Concurrency:     s.Execution.Concurrency,
		Parameters:      params,
		Columns:         columns,
		ReadablePayload: s.ReadablePayload,
		TTLSeconds:      s.Gather.TTLSeconds,
		Approval:        s.Approval.Mode,
		ExecuteRoles:    s.Permissions.ExecuteRoles,
		AuthorRoles:     s.Permissions.AuthorRoles,
		MinAgentVersion: s.Compatibility.MinAgentVersion,
		RequiredPlugins: s.Compatibility.RequiredPlugins,
		Phase:           raw.Status.Phase,
	}, nil
}

// buildParameters checks spec.parameters and returns its properties sorted by name.
func buildParameters(rp *rawParameters) ([]Parameter, []error) {
	if rp == nil {
		return nil, nil
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if rp.Type != "object" {
		bad("spec.parameters.type", "must be object, got %q", rp.Type)
	}
	for i, r := range rp.Required {
		if _, ok := rp.Properties[r]; !ok {
			bad("spec.parameters.required", "%q is not in properties", r)
		} else if slices.Contains(rp.Required[:i], r) {
			bad("spec.parameters.required", "%q listed twice", r)
		}
	}

	names := make([]string, 0, len(rp.Properties))
	for n := range rp.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	params := make([]Parameter, 0, len(names))
	for _, n := range names {
		p, perrs := buildParameter(n, rp.Properties[n], slices.Contains(rp.Required, n))
		errs = append(errs, perrs...)
		params = append(params, p)
	}
	return params, errs
}

// buildParameter checks one property: its name here, its rules with the code that
// checks a plugin's own declarations (sdk.Parameter.Compile), which also compiles its
// pattern once for every later Validate.
func buildParameter(name string, rp rawProperty, required bool) (Parameter, []error) {
	field := "spec.parameters.properties." + name
	var errs []error
	bad := func(sub, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", field, sub, fmt.Sprintf(format, args...)))
	}
	if !nameShape.MatchString(name) {
		bad("", "%q is not a valid parameter name (letters, digits, _ . -)", name)
	}
	v := rp.Validation
	p := Parameter{
		Name:        name,
		Type:        sdk.Type(rp.Type),
		DisplayName: rp.DisplayName,
		Description: rp.Description,
		Required:    required,
		MinLength:   v.MinLength,
		MaxLength:   v.MaxLength,
		Pattern:     v.Pattern,
		Enum:        v.Enum,
		Minimum:     v.Minimum,
		Maximum:     v.Maximum,
	}
	switch d := rp.Default; {
	case d.Kind == 0 || (d.Kind == yaml.ScalarNode && d.Tag == "!!null"):
		// no default
	case d.Kind != yaml.ScalarNode:
		bad(".default", "must be a single value, not a list or map")
	default:
		val := d.Value
		p.Default = &val
	}
	for _, pp := range p.Compile() {
		bad(propertyPath(pp.Field), "%s", pp.Problem)
	}
	return p, errs
}

// propertyPath gives where, under a property, the YAML states what a
// sdk.ParamProblem names: the type and the default beside the validation rules, a
// conflict between two rules on validation itself.
func propertyPath(field string) string {
	switch field {
	case "type", "default":
		return "." + field
	case "":
		return ".validation"
	}
	return ".validation." + field
}

func isValueType(t string) bool { return sdk.Type(t).Valid() }
