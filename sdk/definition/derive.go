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

// What a derived definition says where Go cannot: the defaults a shipped overlay
// changes (docs/definitions.md#derived-definitions). They err on the safe side: an
// action the plugin author has not described as read-only is treated as one that
// changes the device, gated to endpoint admins.
const (
	derivedTTLSeconds = 60
	derivedVersion    = "0.0.0"
)

// vendorShape is a vendor prefix: lowercase dot-separated words (`acme`, `acme.net`).
var vendorShape = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// DerivedID returns the id the SDK derives for an action: `<vendor>.<plugin>.<action>`,
// lower-cased, or "" when vendor is "" (the plugin derives nothing).
func DerivedID(vendor, plugin, action string) string {
	if vendor == "" {
		return ""
	}
	return strings.ToLower(vendor + "." + plugin + "." + action)
}

// Derive returns the complete definition of action a of a plugin that declares the
// vendor prefix vendor: id `<vendor>.<plugin>.<action>`, its parameters, columns and
// platforms from the declaration, the plugin's version when it is a semantic version,
// and for what Go cannot say the cautious defaults: type action, approval role-gated,
// executeRoles [endpoint-admin], ttl 60 s. A shipped document with the same id
// overrides any of these (Served). The error says what the declaration lacks.
func Derive(vendor, plugin, version string, a sdk.Action) (Definition, error) {
	if !vendorShape.MatchString(vendor) {
		return Definition{}, fmt.Errorf("vendor prefix %q: want lowercase dot-separated words such as acme", vendor)
	}
	id := DerivedID(vendor, plugin, a.Name)
	if len(id) > maxIDLength || !idShape.MatchString(id) {
		return Definition{}, fmt.Errorf("action %s: derived id %q is not lowercase dot-separated words", a.Name, id)
	}
	if !semver.Valid(version) {
		version = derivedVersion
	}
	d := Definition{
		ID:              id,
		DisplayName:     plugin + " " + a.Name,
		Version:         version,
		Description:     a.Description,
		Type:            TypeAction,
		Platforms:       availablePlatforms(a),
		Plugin:          plugin,
		Action:          a.Name,
		Concurrency:     "per-device",
		Columns:         slices.Clone(a.Columns),
		TTLSeconds:      derivedTTLSeconds,
		Approval:        ApprovalRoleGated,
		ExecuteRoles:    []string{"endpoint-admin"},
		AuthorRoles:     []string{"content-author"},
		RequiredPlugins: []string{plugin},
		Phase:           "active",
		Source:          "derived from the declaration of " + plugin + " " + a.Name,
	}
	for _, p := range a.Params {
		d.Parameters = append(d.Parameters, cloneParameter(p))
	}
	if len(d.Platforms) == 0 {
		return Definition{}, fmt.Errorf("action %s: declares no operating system where it is supported (sdk.OnAll, sdk.OnLinux...)", a.Name)
	}
	if len(d.Columns) == 0 {
		return Definition{}, fmt.Errorf("action %s: declares no result columns (sdk.Row)", a.Name)
	}
	return d, nil
}

// Served returns every definition a plugin serves: the documents of its files and,
// when it declares a vendor prefix, one derived definition (Derive) for each action no
// document runs. A document whose metadata.id is an action's derived id is an overlay:
// it is laid over that action's derived definition (mappings merge key by key, the
// document's values win, lists are replaced whole), so it need only say what Go
// cannot (description, type, approval, ttl, roles). Every result is then checked as
// Parse checks a file. Without a vendor prefix it is ParseFiles.
func Served(plugin, vendor, version string, actions []sdk.Action, files []sdk.DefinitionFile) ([]Definition, error) {
	if vendor == "" {
		return ParseFiles(files)
	}
	derived := map[string]sdk.Action{}
	for _, a := range actions {
		derived[DerivedID(vendor, plugin, a.Name)] = a
	}
	var all []Definition
	var problems []error
	for _, f := range files {
		data, err := overlay(f.Content, func(id string) (*yaml.Node, error) {
			a, ok := derived[id]
			if !ok {
				return nil, nil
			}
			d, err := Derive(vendor, plugin, version, a)
			if err != nil {
				return nil, err
			}
			return toNode(d)
		})
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", f.Name, err))
			continue
		}
		defs, err := Parse(f.Name, data)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		all = append(all, defs...)
	}
	for _, a := range actions {
		if slices.ContainsFunc(all, func(d Definition) bool { return d.Plugin == plugin && d.Action == a.Name }) {
			continue
		}
		d, err := Derive(vendor, plugin, version, a)
		if err != nil {
			problems = append(problems, fmt.Errorf("plugin %s: %w", plugin, err))
			continue
		}
		all = append(all, d)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if _, err := NewCatalog(all); err != nil {
		return nil, err
	}
	return all, nil
}

// overlay returns data with every document whose metadata.id base names (base returns
// a node, or nil for an id that is not derived) laid over that node. Data without such
// a document comes back unchanged, so Parse's line numbers stay the file's.
func overlay(data []byte, base func(id string) (*yaml.Node, error)) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	changed := false
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return data, nil // Parse reports the syntax error with its line
		}
		if id := documentID(&doc); id != "" {
			b, err := base(id)
			if err != nil {
				return nil, err
			}
			if b != nil {
				merge(b, doc.Content[0])
				doc.Content[0] = b
				changed = true
			}
		}
		docs = append(docs, &doc)
	}
	if !changed {
		return data, nil
	}
	return encodeStream(docs)
}

// encodeStream writes nodes as one YAML stream of documents.
func encodeStream(nodes []*yaml.Node) ([]byte, error) {
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, n := range nodes {
		if err := enc.Encode(n); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// documentID returns a document's metadata.id, or "".
func documentID(doc *yaml.Node) string {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return ""
	}
	md := mappingValue(doc.Content[0], "metadata")
	if id := mappingValue(md, "id"); id != nil && id.Kind == yaml.ScalarNode {
		return id.Value
	}
	return ""
}

// mappingValue returns the value under key in mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// merge lays over onto base: for two mappings key by key (recursively), otherwise over
// replaces base.
func merge(base, over *yaml.Node) {
	if base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode {
		*base = *over
		return
	}
	for i := 0; i+1 < len(over.Content); i += 2 {
		k, v := over.Content[i], over.Content[i+1]
		if bv := mappingValue(base, k.Value); bv != nil {
			merge(bv, v)
			continue
		}
		base.Content = append(base.Content, k, v)
	}
}

// Marshal writes definitions as one YAML stream that Parse reads back to the same
// definitions (what `yuzu-agent describe PLUGIN --definitions` prints, a starting file
// for a plugin's own). Messages declared in Go have no place in the format and are
// left out.
func Marshal(defs []Definition) ([]byte, error) {
	nodes := make([]*yaml.Node, 0, len(defs))
	for _, d := range defs {
		n, err := toNode(d)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return encodeStream(nodes)
}

// toNode turns a definition back into the document Parse would read it from.
func toNode(d Definition) (*yaml.Node, error) {
	raw := rawDoc{
		APIVersion: APIVersion,
		Kind:       Kind,
		Metadata:   rawMetadata{ID: d.ID, DisplayName: d.DisplayName, Version: d.Version, Description: d.Description, Tags: d.Tags},
		Spec: rawSpec{
			Type:            d.Type,
			Platforms:       d.Platforms,
			Execution:       rawExecution{Plugin: d.Plugin, Action: d.Action, Concurrency: d.Concurrency},
			ReadablePayload: d.ReadablePayload,
			Gather:          rawGather{TTLSeconds: d.TTLSeconds},
			Approval:        rawApproval{Mode: d.Approval},
			Permissions:     rawPermissions{ExecuteRoles: d.ExecuteRoles, AuthorRoles: d.AuthorRoles},
			Compatibility:   rawCompatibility{MinAgentVersion: d.MinAgentVersion, RequiredPlugins: d.RequiredPlugins},
		},
		Status: rawStatus{Phase: d.Phase},
	}
	if len(d.Parameters) > 0 {
		rp := &rawParameters{Type: "object", Properties: map[string]rawProperty{}}
		for _, p := range d.Parameters {
			if p.Required {
				rp.Required = append(rp.Required, p.Name)
			}
			prop := rawProperty{
				Type: string(p.Type), DisplayName: p.DisplayName, Description: p.Description,
				Validation: rawValidation{MaxLength: p.MaxLength, MinLength: p.MinLength, Pattern: p.Pattern,
					Enum: p.Enum, Minimum: p.Minimum, Maximum: p.Maximum},
			}
			if p.Default != nil {
				prop.Default = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: *p.Default}
			}
			rp.Properties[p.Name] = prop
		}
		raw.Spec.Parameters = rp
	}
	for _, c := range d.Columns {
		raw.Spec.Result.Columns = append(raw.Spec.Result.Columns, rawColumn{Name: c.Name, Type: string(c.Type)})
	}
	var n yaml.Node
	if err := n.Encode(raw); err != nil {
		return nil, err
	}
	return &n, nil
}

// CheckAgentVersion returns an error naming both versions when d's
// compatibility.minAgentVersion is newer than agent, the version of the agent about to
// run it; nil when d states none or agent is new enough. Versions compare as semantic
// versions: numerically, a pre-release before its release, build metadata ignored.
func (d Definition) CheckAgentVersion(agent string) error {
	if d.MinAgentVersion == "" {
		return nil
	}
	if !semver.Valid(agent) {
		return fmt.Errorf("definition %s needs agent version %s or later; this agent's version %q is not a semantic version", d.ID, d.MinAgentVersion, agent)
	}
	if c, _ := semver.Compare(agent, d.MinAgentVersion); c < 0 {
		return fmt.Errorf("definition %s needs agent version %s or later; this agent is %s", d.ID, d.MinAgentVersion, agent)
	}
	return nil
}
