package definitions

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

// embedded holds every definition file that ships with the agent.
//
//go:embed *.yaml
var embedded embed.FS

// Catalog is a checked set of definitions with unique ids. It is safe for concurrent
// use; every Definition it returns is a copy the caller may change freely.
type Catalog struct {
	byID   map[string]Definition
	sorted []Definition // by ID
}

// load parses the embedded files the first time Load is called.
var load = sync.OnceValues(func() (*Catalog, error) { return LoadFS(embedded) })

// Load returns the catalogue embedded in the binary. It is parsed once; later calls
// return the same Catalog (or the same error).
func Load() (*Catalog, error) { return load() }

// LoadFS parses every *.yaml file at the root of fsys, in name order, and returns
// them as one catalogue. An id defined in two files is an error naming both places.
// Tests and tools use it to load definitions that are not embedded.
func LoadFS(fsys fs.FS) (*Catalog, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("definitions: no *.yaml files")
	}
	slices.Sort(names)
	c := &Catalog{byID: map[string]Definition{}}
	var problems []error
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		defs, err := Parse(name, data)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		for _, d := range defs {
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
