package definition

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/yuzugo/yuzu/sdk"
)

// Catalog is a checked set of definitions with unique ids. It is safe for concurrent
// use; every Definition it returns is a copy the caller may change freely.
type Catalog struct {
	byID   map[string]Definition
	sorted []Definition // by ID
}

// ParseFiles parses YAML definition files, in the order given, and returns every
// definition in them. An id defined twice, in one file or across files, is an error
// naming both places; so is any problem Parse finds. On error nothing is returned.
func ParseFiles(files []sdk.DefinitionFile) ([]Definition, error) {
	var all []Definition
	var problems []error
	for _, f := range files {
		defs, err := Parse(f.Name, f.Content)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		all = append(all, defs...)
	}
	if len(files) == 0 {
		problems = append(problems, errors.New("definitions: no files"))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if _, err := NewCatalog(all); err != nil {
		return nil, err
	}
	return all, nil
}

// ParseFS parses every *.yaml file in directory dir of fsys ("." for the root), in name
// order, with ParseFiles: the files sdk.Plugin.Definitions would ship from there.
// Tests and tools use it to read definitions from a directory.
func ParseFS(fsys fs.FS, dir string) ([]Definition, error) {
	files, err := sdk.ReadDefinitionFiles(fsys, dir)
	if err != nil {
		return nil, err
	}
	return ParseFiles(files)
}

// NewCatalog indexes the definitions of every set given. An id that appears twice is an
// error naming both places (each Definition's Source).
func NewCatalog(sets ...[]Definition) (*Catalog, error) {
	c := &Catalog{byID: map[string]Definition{}}
	var problems []error
	for _, set := range sets {
		for _, d := range set {
			if first, dup := c.byID[d.ID]; dup {
				problems = append(problems, fmt.Errorf("%s (%s): metadata.id: duplicate id, first defined in %s", d.Source, d.ID, first.Source))
				continue
			}
			c.byID[d.ID] = d
			c.sorted = append(c.sorted, d)
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	slices.SortFunc(c.sorted, func(a, b Definition) int { return strings.Compare(a.ID, b.ID) })
	return c, nil
}

// Lookup returns the definition with the given id and whether there is one.
func (c *Catalog) Lookup(id string) (Definition, bool) {
	d, ok := c.byID[id]
	if !ok {
		return Definition{}, false
	}
	return d.clone(), true
}

// All returns every definition, sorted by id.
func (c *Catalog) All() []Definition {
	out := make([]Definition, len(c.sorted))
	for i, d := range c.sorted {
		out[i] = d.clone()
	}
	return out
}

// ForPlugin returns the definitions whose execution.plugin is name, sorted by id.
// It returns an empty slice for a plugin with no definitions.
func (c *Catalog) ForPlugin(name string) []Definition {
	out := []Definition{}
	for _, d := range c.sorted {
		if d.Plugin == name {
			out = append(out, d.clone())
		}
	}
	return out
}
