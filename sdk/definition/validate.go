package definition

import (
	"slices"
	"strings"
)

// ParamError is one parameter that fails its definition.
type ParamError struct {
	// Param is the parameter name as given (or as declared, for a missing one).
	Param string
	// Problem says what is wrong, e.g. "exceeds maxLength 64 (65 bytes)".
	Problem string
}

// Error returns "parameter <name>: <problem>".
func (e *ParamError) Error() string {
	return "parameter " + e.Param + ": " + e.Problem
}

// ValidationError lists every parameter that fails a definition, sorted by
// parameter name, at most one problem per parameter.
type ValidationError struct {
	// Definition is the id of the definition the parameters were checked against.
	Definition string
	// Problems holds one entry per failing parameter, sorted by Param.
	Problems []*ParamError
}

// Error joins the problems with "; " so that the message stays on one line (the
// agent prints it as a single error| row).
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the individual problems, so errors.As can reach a *ParamError.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// Validate checks the parameters of `exec DEFINITION-ID key=value...` against the
// definition (docs/definitions.md) and returns nil or a *ValidationError:
//
//   - a parameter the definition does not declare is refused;
//   - a required parameter that is absent, or present with an empty value, is refused;
//   - every other parameter that is present is checked, even when its value is empty;
//     an absent optional parameter is not checked and its default is not injected
//     (the plugin applies its own defaults);
//   - minLength and maxLength count bytes, not characters;
//   - pattern must match the whole value;
//   - int32 and int64 values must be plain base-10 integers (an optional sign, digits,
//     nothing else), inside the type's range and inside minimum and maximum;
//   - bool values must be exactly "true" or "false";
//   - enum values must be one of the listed strings, compared exactly.
//
// Every failing parameter is reported, in sorted name order, with the first rule it
// breaks; params is not modified.
func (d Definition) Validate(params map[string]string) error {
	names := make([]string, 0, len(params)+len(d.Parameters))
	for n := range params {
		names = append(names, n)
	}
	for _, p := range d.Parameters {
		if p.Required {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)

	var problems []*ParamError
	for _, n := range names {
		if problem := d.checkOne(n, params); problem != "" {
			problems = append(problems, &ParamError{Param: n, Problem: problem})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &ValidationError{Definition: d.ID, Problems: problems}
}

// checkOne returns what is wrong with parameter name, or "".
func (d Definition) checkOne(name string, params map[string]string) string {
	p, declared := d.Param(name)
	if !declared {
		return "unknown parameter for " + d.ID
	}
	_, problem := p.CheckGiven(params)
	return problem
}
