package host

import (
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
)

// The host's conversions from the wire's types to the SDK's and the host's (toproto.go
// has the other direction; the plugin side's are in package sdk, which cannot share
// them: see its toproto.go). A plugin built with an older SDK leaves the newer fields
// empty.

// resultFromProto reads a command's result. A plugin not built with this SDK may
// send numbers no one defined; they stop here.
func resultFromProto(r *pluginv1.Result) sdk.Result {
	return sdk.Result{
		Code:         int(r.GetReturnCode()),
		Status:       sdk.Status(r.GetStatus()).Known(),
		Completeness: sdk.Completeness(r.GetCompleteness()).Known(),
		Provenance:   r.GetProvenance(),
	}
}

func manifestFromProto(pm *pluginv1.Manifest) Manifest {
	m := Manifest{
		Name:        pm.GetName(),
		Version:     pm.GetVersion(),
		Description: pm.GetDescription(),
		SDKVersion:  pm.GetSdkVersion(),
		Vendor:      pm.GetVendor(),
	}
	for _, a := range pm.GetActions() {
		act := sdk.Action{
			Name:        a.GetName(),
			Description: a.GetDescription(),
			Linux:       supportFromProto(a.GetLinux()),
			Darwin:      supportFromProto(a.GetDarwin()),
			Windows:     supportFromProto(a.GetWindows()),
			Columns:     columnsFromProto(a.GetColumns()),

			OnlyDeclaredParams: a.GetOnlyDeclaredParams(),
			MechanismProbe:     a.GetMechanismProbe(),
		}
		for _, p := range a.GetParameters() {
			act.Params = append(act.Params, parameterFromProto(p))
		}
		for _, r := range a.GetRows() {
			act.Rows = append(act.Rows, sdk.RowKind{Kind: r.GetKind(), Columns: columnsFromProto(r.GetColumns())})
		}
		m.Actions = append(m.Actions, act)
	}
	for _, d := range pm.GetDefinitions() {
		m.Definitions = append(m.Definitions, sdk.DefinitionFile{Name: d.GetName(), Content: d.GetContent()})
	}
	return m
}

func supportFromProto(l *pluginv1.OsLeg) sdk.OSSupport {
	return sdk.OSSupport{
		Level:     sdk.SupportLevel(l.GetSupport()),
		Rung:      int(l.GetRung()),
		Mechanism: l.GetMechanism(),
		Fallback:  l.GetFallback(),
	}
}

func typeFromProto(t pluginv1.ValueType) sdk.Type {
	switch t {
	case pluginv1.ValueType_VALUE_TYPE_STRING:
		return sdk.TypeString
	case pluginv1.ValueType_VALUE_TYPE_INT32:
		return sdk.TypeInt32
	case pluginv1.ValueType_VALUE_TYPE_INT64:
		return sdk.TypeInt64
	case pluginv1.ValueType_VALUE_TYPE_BOOL:
		return sdk.TypeBool
	}
	return sdk.Type("unspecified")
}

func columnsFromProto(cols []*pluginv1.Column) []sdk.Column {
	if len(cols) == 0 {
		return nil
	}
	out := make([]sdk.Column, len(cols))
	for i, c := range cols {
		out[i] = sdk.Column{Name: c.GetName(), Type: typeFromProto(c.GetType())}
	}
	return out
}

func parameterFromProto(p *pluginv1.Parameter) sdk.Parameter {
	out := sdk.Parameter{
		Name:        p.GetName(),
		Type:        typeFromProto(p.GetType()),
		DisplayName: p.GetDisplayName(),
		Description: p.GetDescription(),
		Required:    p.GetRequired(),
		Default:     p.DefaultValue,
		Pattern:     p.GetPattern(),
		Enum:        p.GetEnumValues(),
		Minimum:     p.Minimum,
		Maximum:     p.Maximum,
		Clamped:     p.GetClamped(),
	}
	// A rule this SDK does not know would fail Compile; such a message is dropped
	// rather than the whole manifest refused (the plugin's own check still uses it).
	for r, text := range p.GetMessages() {
		if sdk.Rule(r).Valid() {
			if out.Messages == nil {
				out.Messages = map[sdk.Rule]string{}
			}
			out.Messages[sdk.Rule(r)] = text
		}
	}
	if p.MinLength != nil {
		n := int(*p.MinLength)
		out.MinLength = &n
	}
	if p.MaxLength != nil {
		n := int(*p.MaxLength)
		out.MaxLength = &n
	}
	return out
}

// progressFromProto reads a progress report.
func progressFromProto(p *pluginv1.Progress) (done, total uint64, unit string) {
	return p.GetDone(), p.GetTotal(), p.GetUnit()
}
