package definition

import (
	"maps"
	"slices"
	"strings"

	"github.com/yuzugo/yuzu/sdk"
)

// ParamError is one parameter that fails its definition: the same error, with the
// same text, the plugin answers for a parameter that fails its declaration.
type ParamError = sdk.ParamError

// Validate checks the parameters of `exec DEFINITION-ID key=value...` against the
// definition (docs/definitions.md) and returns nil or the first refusal, a
// *ParamError. It is sdk.CheckParams, the check a plugin runs before its handler, over
// the definition's parameters in their order, plus one rule of definitions only:
//
//   - a required parameter that is absent, or present with an empty value, is refused;
//   - every other parameter that is present is checked, even when its value is empty;
//     an absent optional parameter is not checked and its default is not injected
//     (the plugin applies its own defaults);
//   - minLength and maxLength count bytes, not characters;
//   - pattern must match the whole value;
//   - int32 and int64 values must be plain base-10 integers (an optional sign, digits,
//     nothing else), inside the type's range and inside minimum and maximum;
//   - bool values must be exactly "true" or "false";
//   - enum values must be one of the listed strings, compared exactly;
//   - then a parameter the definition does not declare is refused (the first in name
//     order).
//
// Use WithDeclaration first so that the order and the wording are the plugin's own;
// params is not modified.
func (d Definition) Validate(params map[string]string) error {
	if err := sdk.CheckParams(d.Parameters, params); err != nil {
		return err
	}
	var unknown []string
	for n := range params {
		if _, declared := d.Param(n); !declared {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	n := slices.Min(unknown)
	return &ParamError{Param: n, Message: "parameter " + n + ": unknown parameter for " + d.ID}
}

// WithDeclaration returns a copy of d whose parameters are checked the way action a
// checks its own: in a's declaration order (parameters a does not declare follow, by
// name) and with a's Messages for the parameters both name. The agent applies it once
// a definition is known to agree with the action it runs, so that `exec DEFINITION-ID`
// refuses a value with the very row `exec PLUGIN ACTION` and the fleet path would.
func (d Definition) WithDeclaration(a sdk.Action) Definition {
	c := d.clone()
	rank := func(p Parameter) int {
		if i := slices.IndexFunc(a.Params, func(ap sdk.Parameter) bool { return ap.Name == p.Name }); i >= 0 {
			return i
		}
		return len(a.Params)
	}
	slices.SortStableFunc(c.Parameters, func(x, y Parameter) int {
		if rx, ry := rank(x), rank(y); rx != ry {
			return rx - ry
		}
		return strings.Compare(x.Name, y.Name)
	})
	for i := range c.Parameters {
		if ap, ok := a.Param(c.Parameters[i].Name); ok && len(ap.Messages) > 0 {
			c.Parameters[i].Messages = maps.Clone(ap.Messages)
		}
	}
	return c
}
