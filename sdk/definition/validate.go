package definitions

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
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
// definition (DECISIONS 34) and returns nil or a *ValidationError:
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
	v, present := params[name]
	if p.Required && v == "" {
		return "required"
	}
	if !present {
		return ""
	}
	return p.check(v, true)
}

// maxQuoted bounds how much of a bad value an error message repeats; a value can be
// long and the message goes into logs and a single output row.
const maxQuoted = 64

// quote quotes v for a message, shortened to maxQuoted bytes.
func quote(v string) string {
	if len(v) <= maxQuoted {
		return strconv.Quote(v)
	}
	return strconv.Quote(v[:maxQuoted]) + "..."
}

// check returns what is wrong with value v for this parameter, or "". checkEnum is
// false while the enum itself is being checked at parse time.
func (p Parameter) check(v string, checkEnum bool) string {
	switch p.Type {
	case TypeString:
		if p.MinLength != nil && len(v) < *p.MinLength {
			return fmt.Sprintf("shorter than minLength %d (%d bytes)", *p.MinLength, len(v))
		}
		if p.MaxLength != nil && len(v) > *p.MaxLength {
			return fmt.Sprintf("exceeds maxLength %d (%d bytes)", *p.MaxLength, len(v))
		}
		if p.Pattern != "" {
			re := p.re
			if re == nil { // built by hand rather than by Parse
				var err error
				if re, err = compileAnchored(p.Pattern); err != nil {
					return "definition has an invalid pattern: " + err.Error()
				}
			}
			if !re.MatchString(v) {
				return "does not match pattern " + p.Pattern
			}
		}
	case TypeInt32, TypeInt64:
		bits := 64
		if p.Type == TypeInt32 {
			bits = 32
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if errors.Is(err, strconv.ErrRange) {
			return fmt.Sprintf("%s is out of range for %s", quote(v), p.Type)
		}
		if err != nil {
			return fmt.Sprintf("not a valid %s: %s", p.Type, quote(v))
		}
		if p.Minimum != nil && n < *p.Minimum {
			return fmt.Sprintf("%d is below minimum %d", n, *p.Minimum)
		}
		if p.Maximum != nil && n > *p.Maximum {
			return fmt.Sprintf("%d is above maximum %d", n, *p.Maximum)
		}
	case TypeBool:
		if v != "true" && v != "false" {
			return fmt.Sprintf("must be true or false (got %s)", quote(v))
		}
	default:
		return fmt.Sprintf("definition declares unknown type %q", p.Type)
	}
	if checkEnum && p.Enum != nil && !slices.Contains(p.Enum, v) {
		return fmt.Sprintf("must be one of %s (got %s)", strings.Join(p.Enum, ", "), quote(v))
	}
	return ""
}
