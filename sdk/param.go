package sdk

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Type is how a parameter's or a column's text is read. Values always travel as text;
// the names are the ones InstructionDefinitions use.
type Type string

// The value types.
const (
	TypeString Type = "string"
	TypeInt32  Type = "int32"
	TypeInt64  Type = "int64"
	TypeBool   Type = "bool"
)

// Valid reports whether t is one of the four value types.
func (t Type) Valid() bool {
	switch t {
	case TypeString, TypeInt32, TypeInt64, TypeBool:
		return true
	}
	return false
}

// Rule names one check a parameter value can fail. A parameter's Messages may replace
// the SDK's wording for any of them.
type Rule string

// The rules, in the order they are checked.
const (
	RuleRequired  Rule = "required"
	RuleType      Rule = "type"
	RuleMinLength Rule = "minLength"
	RuleMaxLength Rule = "maxLength"
	RulePattern   Rule = "pattern"
	RuleEnum      Rule = "enum"
	RuleMinimum   Rule = "minimum"
	RuleMaximum   Rule = "maximum"
)

// Parameter declares one parameter of an action: its type and the rules a value must
// meet, the same rules an InstructionDefinition can state. The SDK checks every
// declared parameter before the handler runs; a parameter the action does not declare
// still reaches the handler unchecked.
//
// Optional rules are pointers so that a rule of 0 (minimum: 0) stays distinct from no
// rule. Build a Parameter with Param and its options rather than by hand.
type Parameter struct {
	Name        string
	Type        Type
	DisplayName string
	Description string
	// Required refuses a value that is absent or empty.
	Required bool
	// Default is the value the action uses when the parameter is absent. It is
	// documentation: the handler applies it itself (Params.Get), nothing injects it.
	Default *string
	// MinLength and MaxLength bound a string's length in bytes.
	MinLength, MaxLength *int
	// Pattern is an RE2 expression the whole value must match.
	Pattern string
	// Enum lists the allowed values, compared exactly.
	Enum []string
	// Minimum and Maximum bound an integer, inclusive.
	Minimum, Maximum *int64
	// Clamped says the action brings an integer outside Minimum..Maximum to the nearest
	// bound itself, so the SDK does not refuse it (the bounds still document the range).
	Clamped bool
	// Messages replaces the SDK's error text for a rule, for actions whose contract
	// prescribes their own error rows. In the text, {name} stands for the parameter's
	// name and {value} for the value as given.
	Messages map[Rule]string

	// re is Pattern compiled and anchored by Compile, and reFor the Pattern it was
	// compiled from: a copy whose Pattern was changed afterwards must not be checked
	// against the old expression.
	re    *regexp.Regexp
	reFor string
}

// ParamOption sets one property of a declared parameter.
type ParamOption func(*Parameter)

// Required makes the parameter mandatory: absent or empty is refused.
func Required() ParamOption { return func(p *Parameter) { p.Required = true } }

// Default documents the value the action uses when the parameter is absent.
func Default(v string) ParamOption { return func(p *Parameter) { p.Default = &v } }

// DisplayName sets a short human label.
func DisplayName(label string) ParamOption { return func(p *Parameter) { p.DisplayName = label } }

// MinLength refuses a string shorter than n bytes.
func MinLength(n int) ParamOption { return func(p *Parameter) { p.MinLength = &n } }

// MaxLength refuses a string longer than n bytes.
func MaxLength(n int) ParamOption { return func(p *Parameter) { p.MaxLength = &n } }

// Pattern refuses a string the RE2 expression does not match as a whole.
func Pattern(expr string) ParamOption { return func(p *Parameter) { p.Pattern = expr } }

// Enum refuses any value but the ones listed.
func Enum(values ...string) ParamOption {
	return func(p *Parameter) { p.Enum = append([]string{}, values...) }
}

// Minimum refuses an integer below n (unless Clamped).
func Minimum(n int64) ParamOption { return func(p *Parameter) { p.Minimum = &n } }

// Maximum refuses an integer above n (unless Clamped).
func Maximum(n int64) ParamOption { return func(p *Parameter) { p.Maximum = &n } }

// Clamped lets integers outside Minimum..Maximum through: the action clamps them.
func Clamped() ParamOption { return func(p *Parameter) { p.Clamped = true } }

// Message replaces the SDK's error text when the value breaks rule. {name} and {value}
// in text are replaced by the parameter's name and the value as given.
func Message(rule Rule, text string) ParamOption {
	return func(p *Parameter) {
		if p.Messages == nil {
			p.Messages = map[Rule]string{}
		}
		p.Messages[rule] = text
	}
}

// compile checks the declaration when the action is registered, so that a broken one
// is found by the first test run, and compiles its pattern. Registration stops at the
// first problem: one is enough to fail the test that finds it.
func (p *Parameter) compile() error {
	if p.Name == "" {
		return errors.New("parameter with an empty name")
	}
	if problems := p.Compile(); len(problems) > 0 {
		return fmt.Errorf("parameter %s: %s", p.Name, problems[0])
	}
	return nil
}

// ParamProblem is one thing wrong with a parameter declaration.
type ParamProblem struct {
	// Field names what is wrong as an InstructionDefinition spells it: "type",
	// "minLength", "maxLength", "pattern", "minimum", "maximum", "enum", "enum[i]" for
	// the i-th enum value, "default"; "clamped" and "messages" exist only in a
	// declaration made in Go. It is "" for two rules that contradict each other, such
	// as a minLength above the maxLength.
	Field string
	// Problem says what is wrong, without the parameter's name.
	Problem string
}

// String returns "<field>: <problem>", or the problem alone when Field is "".
func (pp ParamProblem) String() string {
	if pp.Field == "" {
		return pp.Problem
	}
	return pp.Field + ": " + pp.Problem
}

// Compile checks the declaration itself, not its name, and compiles its pattern, which
// later Checks then use instead of compiling it on every call. It returns every
// problem found, nil for a sound declaration. Rules that cannot apply to the type (a
// pattern on an integer, a minimum on a string) are refused rather than ignored,
// because whoever wrote them expected them to be enforced. The enum values and the
// default must pass Check, but are looked at only once the other rules are sound, as a
// broken rule would make every one of them fail for the same reason.
//
// The SDK compiles every parameter it registers, and package definition every
// parameter it parses, so that a plugin's declarations and its definitions are held
// to the same rules.
func (p *Parameter) Compile() []ParamProblem {
	var out []ParamProblem
	bad := func(field, format string, args ...any) {
		out = append(out, ParamProblem{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	p.re, p.reFor = nil, ""
	if !p.Type.Valid() {
		bad("type", "must be string, int32, int64 or bool, got %q", p.Type)
		return out // every other rule depends on the type
	}
	isString := p.Type == TypeString
	isInt := p.Type == TypeInt32 || p.Type == TypeInt64

	for _, l := range []struct {
		field string
		val   *int
	}{{"minLength", p.MinLength}, {"maxLength", p.MaxLength}} {
		switch {
		case l.val == nil:
		case !isString:
			bad(l.field, "applies only to string parameters, not %s", p.Type)
		case *l.val < 0:
			bad(l.field, "must not be negative, got %d", *l.val)
		}
	}
	if isString && p.MinLength != nil && p.MaxLength != nil && *p.MinLength > *p.MaxLength {
		bad("", "minLength %d is greater than maxLength %d", *p.MinLength, *p.MaxLength)
	}
	if p.Pattern != "" {
		if !isString {
			bad("pattern", "applies only to string parameters, not %s", p.Type)
		} else if re, err := compileAnchored(p.Pattern); err != nil {
			bad("pattern", "%v", err)
		} else {
			p.re, p.reFor = re, p.Pattern
		}
	}

	lo, hi := intRange(p.Type)
	for _, b := range []struct {
		field string
		val   *int64
	}{{"minimum", p.Minimum}, {"maximum", p.Maximum}} {
		switch {
		case b.val == nil:
		case !isInt:
			bad(b.field, "applies only to int32 and int64 parameters, not %s", p.Type)
		case *b.val < lo || *b.val > hi:
			bad(b.field, "%d is out of range for %s", *b.val, p.Type)
		}
	}
	if p.Clamped && !isInt {
		bad("clamped", "applies only to int32 and int64 parameters, not %s", p.Type)
	}
	if isInt && p.Minimum != nil && p.Maximum != nil && *p.Minimum > *p.Maximum {
		bad("", "minimum %d is greater than maximum %d", *p.Minimum, *p.Maximum)
	}
	for _, rule := range slices.Sorted(maps.Keys(p.Messages)) {
		if !slices.Contains(allRules, rule) {
			bad("messages", "unknown rule %q", rule)
		}
	}
	if len(out) > 0 {
		return out
	}

	if p.Enum != nil && len(p.Enum) == 0 {
		bad("enum", "an empty enum allows no value")
	}
	for i, e := range p.Enum {
		// An enum value the other rules refuse could never be sent.
		if _, problem := p.Check(e); problem != "" {
			bad(fmt.Sprintf("enum[%d]", i), "%s", problem)
		} else if slices.Contains(p.Enum[:i], e) {
			bad(fmt.Sprintf("enum[%d]", i), "%q listed twice", e)
		}
	}
	if p.Default != nil {
		if _, problem := p.Check(*p.Default); problem != "" {
			bad("default", "%s", problem)
		}
	}
	return out
}

// Valid reports whether r is one of the rules above.
func (r Rule) Valid() bool { return slices.Contains(allRules, r) }

var allRules = []Rule{RuleRequired, RuleType, RuleMinLength, RuleMaxLength, RulePattern, RuleEnum, RuleMinimum, RuleMaximum}

// compileAnchored compiles an RE2 expression so that it must match a whole value, the
// meaning of a pattern in a parameter declaration: an unanchored match would accept any
// value that merely contains a matching part.
func compileAnchored(expr string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(expr); err != nil {
		return nil, err // the message then quotes the expression as written
	}
	return regexp.Compile(`\A(?:` + expr + `)\z`)
}

// maxQuoted bounds how much of a bad value a message repeats: values can be long and
// the message ends up in one row and in logs.
const maxQuoted = 64

// quote quotes v for an error message, shortened to 64 bytes.
func quote(v string) string {
	if len(v) <= maxQuoted {
		return strconv.Quote(v)
	}
	return strconv.Quote(v[:maxQuoted]) + "..."
}

// Check checks a value that is present (even when empty) against every rule but
// RuleRequired and returns the first rule it breaks with the SDK's description of the
// problem, or "", "" when the value is acceptable. Integers outside Minimum..Maximum
// pass when the parameter is Clamped.
func (p *Parameter) Check(v string) (Rule, string) {
	switch p.Type {
	case TypeString:
		if p.MinLength != nil && len(v) < *p.MinLength {
			return RuleMinLength, fmt.Sprintf("shorter than minLength %d (%d bytes)", *p.MinLength, len(v))
		}
		if p.MaxLength != nil && len(v) > *p.MaxLength {
			return RuleMaxLength, fmt.Sprintf("exceeds maxLength %d (%d bytes)", *p.MaxLength, len(v))
		}
		if p.Pattern != "" {
			re := p.re
			if re == nil || p.reFor != p.Pattern {
				// Not compiled (a Parameter built by hand, such as one in a Definition
				// written as a literal) or compiled from another Pattern: checking it
				// anyway keeps the rule, at the price of compiling it each time.
				var err error
				if re, err = compileAnchored(p.Pattern); err != nil {
					return RulePattern, "the declared pattern is invalid: " + err.Error()
				}
			}
			if !re.MatchString(v) {
				return RulePattern, "does not match pattern " + p.Pattern
			}
		}
	case TypeInt32, TypeInt64:
		bits := 64
		if p.Type == TypeInt32 {
			bits = 32
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if errors.Is(err, strconv.ErrRange) {
			return RuleType, fmt.Sprintf("%s is out of range for %s", quote(v), p.Type)
		}
		if err != nil {
			return RuleType, fmt.Sprintf("not a valid %s: %s", p.Type, quote(v))
		}
		if !p.Clamped {
			if p.Minimum != nil && n < *p.Minimum {
				return RuleMinimum, fmt.Sprintf("%d is below minimum %d", n, *p.Minimum)
			}
			if p.Maximum != nil && n > *p.Maximum {
				return RuleMaximum, fmt.Sprintf("%d is above maximum %d", n, *p.Maximum)
			}
		}
	case TypeBool:
		if v != "true" && v != "false" {
			return RuleType, fmt.Sprintf("must be true or false (got %s)", quote(v))
		}
	default:
		return RuleType, fmt.Sprintf("declared with unknown type %q", p.Type)
	}
	if p.Enum != nil && !slices.Contains(p.Enum, v) {
		return RuleEnum, fmt.Sprintf("must be one of %s (got %s)", strings.Join(p.Enum, ", "), quote(v))
	}
	return "", ""
}

// message words a broken rule for the action's error row: the declared Message when
// there is one, else the SDK's wording.
func (p *Parameter) message(rule Rule, problem, value string) string {
	if text, ok := p.Messages[rule]; ok {
		return strings.NewReplacer("{name}", p.Name, "{value}", value).Replace(text)
	}
	if rule == RuleRequired {
		return "missing required parameter: " + p.Name
	}
	return "parameter " + p.Name + ": " + problem
}

// CheckGiven checks the value params gives for p, the one rule Check leaves out
// included: it returns RuleRequired and "required" when p is required and the value
// is absent or empty, then whatever Check finds in a value that is present, or "", ""
// when there is nothing to refuse (an absent optional parameter is not checked).
func (p *Parameter) CheckGiven(params map[string]string) (Rule, string) {
	v, present := params[p.Name]
	if p.Required && v == "" {
		return RuleRequired, "required"
	}
	if !present {
		return "", ""
	}
	return p.Check(v)
}

// ParamError is a parameter value its declaration refuses. Every path a command takes
// (`exec PLUGIN ACTION`, `exec DEFINITION-ID`, the fleet server) refuses it with the
// same one error row, the Message.
type ParamError struct {
	Param string
	// Rule is the rule the value breaks; "" for a parameter a definition does not
	// declare.
	Rule Rule
	// Message is the error row's text: the declared Message for Rule, else the SDK's
	// wording ("missing required parameter: key", "parameter key: ...").
	Message string
}

// Error returns the Message.
func (e *ParamError) Error() string { return e.Message }

// CheckParams is the one parameter check: it checks params against decl in
// declaration order and returns the first refusal as a *ParamError, or nil. The SDK
// runs it before every handler; the agent runs it, with the plugin's declarations,
// before a command through a definition starts the plugin.
func CheckParams(decl []Parameter, params map[string]string) error {
	for i := range decl {
		p := &decl[i]
		if rule, problem := p.CheckGiven(params); rule != "" {
			return &ParamError{Param: p.Name, Rule: rule, Message: p.message(rule, problem, params[p.Name])}
		}
	}
	return nil
}

// CheckDeclared refuses the first parameter, by name, that decl does not declare, with
// the same kind of *ParamError a rule gives: it is the check of an action that takes
// only what it declares (OnlyDeclaredParams).
func CheckDeclared(action string, decl []Parameter, params map[string]string) error {
	var first string
	for n := range params {
		if (first == "" || n < first) && !slices.ContainsFunc(decl, func(p Parameter) bool { return p.Name == n }) {
			first = n
		}
	}
	if first == "" {
		return nil
	}
	return &ParamError{Param: first, Message: "parameter " + first + ": not declared by action " + action}
}

// intRange gives the inclusive range of an integer type.
func intRange(t Type) (lo, hi int64) {
	if t == TypeInt32 {
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// Column is one field of a row after its kind.
type Column struct {
	Name string
	Type Type
}

// RowKind declares one kind of row an action writes: its literal first field and the
// columns after it.
type RowKind struct {
	Kind    string
	Columns []Column
}

// parseColumns reads "name" and "name:type" column specs.
func parseColumns(specs []string) ([]Column, error) {
	cols := make([]Column, 0, len(specs))
	for _, s := range specs {
		name, typ, hasType := strings.Cut(s, ":")
		c := Column{Name: name, Type: TypeString}
		if hasType {
			c.Type = Type(typ)
		}
		if name == "" || !c.Type.Valid() {
			return nil, fmt.Errorf("column %q: want name or name:type with type string, int32, int64 or bool", s)
		}
		cols = append(cols, c)
	}
	return cols, nil
}
