package sdk

import (
	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// The plugin side's conversions from the SDK's types to the wire's; fromproto.go has
// the other direction. The host's are in package host, toproto.go and fromproto.go.
// They cannot share one package per direction: that package would import sdk for its
// types, and sdk's server would import it back. The generated types never appear in
// either package's API.

func manifestToProto(p *Plugin) *pluginv1.Manifest {
	m := &pluginv1.Manifest{
		Name:        p.Name,
		Version:     p.Version,
		Description: p.Description,
		SdkVersion:  Version,
		Vendor:      p.Vendor,
	}
	for _, a := range p.actions {
		pa := &pluginv1.Action{
			Name:        a.Name,
			Description: a.Description,
			Linux:       supportToProto(a.Linux),
			Darwin:      supportToProto(a.Darwin),
			Windows:     supportToProto(a.Windows),
			Columns:     columnsToProto(a.Columns),

			OnlyDeclaredParams: a.OnlyDeclaredParams,
			MechanismProbe:     a.MechanismProbe,
		}
		for i := range a.Params {
			pa.Parameters = append(pa.Parameters, parameterToProto(&a.Params[i]))
		}
		for _, r := range a.Rows {
			pa.Rows = append(pa.Rows, &pluginv1.RowKind{Kind: r.Kind, Columns: columnsToProto(r.Columns)})
		}
		m.Actions = append(m.Actions, pa)
	}
	for _, d := range p.definitions {
		m.Definitions = append(m.Definitions, &pluginv1.DefinitionFile{Name: d.Name, Content: d.Content})
	}
	return m
}

func supportToProto(s OSSupport) *pluginv1.OsLeg {
	return &pluginv1.OsLeg{
		Support:   pluginv1.SupportLevel(s.Level),
		Rung:      int32(s.Rung),
		Mechanism: s.Mechanism,
		Fallback:  s.Fallback,
	}
}

func columnsToProto(cols []Column) []*pluginv1.Column {
	out := make([]*pluginv1.Column, len(cols))
	for i, c := range cols {
		out[i] = &pluginv1.Column{Name: c.Name, Type: typeToProto(c.Type)}
	}
	return out
}

// typeToProto converts a value type to its wire form.
func typeToProto(t Type) pluginv1.ValueType {
	switch t {
	case TypeString:
		return pluginv1.ValueType_VALUE_TYPE_STRING
	case TypeInt32:
		return pluginv1.ValueType_VALUE_TYPE_INT32
	case TypeInt64:
		return pluginv1.ValueType_VALUE_TYPE_INT64
	case TypeBool:
		return pluginv1.ValueType_VALUE_TYPE_BOOL
	}
	return pluginv1.ValueType_VALUE_TYPE_UNSPECIFIED
}

// parameterToProto converts a declared parameter to its wire form.
func parameterToProto(p *Parameter) *pluginv1.Parameter {
	pp := &pluginv1.Parameter{
		Name:         p.Name,
		Type:         typeToProto(p.Type),
		Required:     p.Required,
		DefaultValue: p.Default,
		Description:  p.Description,
		Pattern:      p.Pattern,
		EnumValues:   p.Enum,
		Minimum:      p.Minimum,
		Maximum:      p.Maximum,
		Clamped:      p.Clamped,
		DisplayName:  p.DisplayName,
	}
	if len(p.Messages) > 0 {
		pp.Messages = make(map[string]string, len(p.Messages))
		for r, text := range p.Messages {
			pp.Messages[string(r)] = text
		}
	}
	if p.MinLength != nil {
		n := uint32(*p.MinLength)
		pp.MinLength = &n
	}
	if p.MaxLength != nil {
		n := uint32(*p.MaxLength)
		pp.MaxLength = &n
	}
	return pp
}

func rowsToProto(batch []string) *pluginv1.ExecuteResponse {
	return &pluginv1.ExecuteResponse{Event: &pluginv1.ExecuteResponse_Rows{Rows: &pluginv1.RowBatch{Rows: batch}}}
}

func progressToProto(done, total uint64, unit string) *pluginv1.ExecuteResponse {
	return &pluginv1.ExecuteResponse{Event: &pluginv1.ExecuteResponse_Progress{Progress: &pluginv1.Progress{Done: done, Total: total, Unit: unit}}}
}

func resultToProto(res Result) *pluginv1.ExecuteResponse {
	return &pluginv1.ExecuteResponse{Event: &pluginv1.ExecuteResponse_Result{Result: &pluginv1.Result{
		ReturnCode:   int32(res.Code),
		Status:       pluginv1.ResultStatus(res.Status.Known()),
		Completeness: pluginv1.Completeness(res.Completeness.Known()),
		// A provenance that is not valid UTF-8 could not be marshalled, and the
		// agent would lose the answer and take the plugin for crashed.
		Provenance: rows.ValidUTF8(res.Provenance),
	}}}
}
