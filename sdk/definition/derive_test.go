package definition

import (
	"context"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk"
)

func derivePlugin() *sdk.Plugin {
	p := sdk.New("disk", "1.2.3", "")
	p.Vendor = "acme"
	nop := func(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) { return sdk.Done(), nil }
	linux := sdk.OnLinux(sdk.OSSupport{Level: sdk.SupportSupported})
	p.Handle("scan", nop, sdk.Describe("Scans"),
		sdk.Param("depth", sdk.TypeInt32, "How deep", sdk.Default("3"), sdk.Minimum(0), sdk.Maximum(9)),
		sdk.Param("mode", sdk.TypeString, "How", sdk.Required(), sdk.Enum("fast", "full"),
			sdk.Message(sdk.RuleEnum, "mode is fast or full")),
		sdk.Row("file", "path", "size:int64"), linux)
	p.Handle("wipe", nop, sdk.Row("wiped", "count:int32"), linux)
	return p
}

const overlayYAML = `# Only what Go cannot say.
apiVersion: yuzu.io/v1alpha1
kind: InstructionDefinition
metadata:
  id: acme.disk.scan
  displayName: Scan a disk
  description: Lists files.
spec:
  type: question
  approval:
    mode: auto
  gather:
    ttlSeconds: 300
`

func TestServedDerivesAndOverlays(t *testing.T) {
	p := derivePlugin()
	files := []sdk.DefinitionFile{{Name: "disk.yaml", Content: []byte(overlayYAML)}}
	defs, err := Served(p.Name, p.Vendor, p.Version, p.Actions(), files)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 2 || defs[0].ID != "acme.disk.scan" || defs[1].ID != "acme.disk.wipe" {
		t.Fatalf("served %+v", defs)
	}
	scan, wipe := defs[0], defs[1]
	// The overlay's values win; the rest comes from the declaration.
	if scan.Type != TypeQuestion || scan.Approval != ApprovalAuto || scan.TTLSeconds != 300 || scan.DisplayName != "Scan a disk" ||
		scan.Version != "1.2.3" || len(scan.Parameters) != 2 || !scan.SupportsPlatform("linux") || scan.SupportsPlatform("windows") {
		t.Errorf("overlaid scan %+v", scan)
	}
	// Without an overlay, the cautious defaults.
	if wipe.Type != TypeAction || wipe.Approval != ApprovalRoleGated || wipe.ExecuteRoles[0] != "endpoint-admin" || wipe.TTLSeconds != 60 {
		t.Errorf("derived wipe %+v", wipe)
	}
	if problems := CheckAgreement(p.Name, p.Actions(), defs); len(problems) != 0 {
		t.Errorf("derived definitions disagree with their declarations: %v", problems)
	}
	// The plugin's own wording reaches a command through the definition.
	if err := scan.WithDeclaration(p.Actions()[0]).Validate(map[string]string{"mode": "slow"}); err == nil || err.Error() != "mode is fast or full" {
		t.Errorf("Validate = %v", err)
	}
}

func TestMarshalRoundTrips(t *testing.T) {
	p := derivePlugin()
	defs, err := Served(p.Name, p.Vendor, p.Version, p.Actions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("printed.yaml", data)
	if err != nil {
		t.Fatalf("Parse of Marshal's output: %v\n%s", err, data)
	}
	if problems := CheckAgreement(p.Name, p.Actions(), again); len(problems) != 0 {
		t.Errorf("printed definitions disagree: %v\n%s", problems, data)
	}
	for _, want := range []string{"id: acme.disk.scan", "minimum: 0", "maximum: 9", "enum:", "- fast", "default: \"3\""} {
		if !strings.Contains(string(data), want) {
			t.Errorf("printed YAML lacks %q:\n%s", want, data)
		}
	}
}

func TestServedRefusesWhatCannotBeDerived(t *testing.T) {
	nop := func(context.Context, *sdk.Request, *sdk.Output) (sdk.Result, error) { return sdk.Done(), nil }
	cases := []struct {
		name   string
		vendor string
		opts   []sdk.ActionOption
		want   string
	}{
		{"no platforms", "acme", []sdk.ActionOption{sdk.Row("r", "c")}, "declares no operating system"},
		{"no columns", "acme", []sdk.ActionOption{sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported})}, "declares no result columns"},
		{"bad vendor", "Acme Corp", []sdk.ActionOption{sdk.Row("r", "c"), sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported})}, "vendor prefix"},
	}
	for _, c := range cases {
		p := sdk.New("disk", "1", "")
		p.Handle("scan", nop, c.opts...)
		_, err := Served(p.Name, c.vendor, p.Version, p.Actions(), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Served error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Without a vendor, nothing is derived: a plugin must ship its definitions.
	if _, err := Served("disk", "", "1", nil, nil); err == nil {
		t.Error("Served without vendor or files succeeded")
	}
}

func TestCheckAgentVersion(t *testing.T) {
	cases := []struct {
		min, agent string
		ok         bool
	}{
		{"", "0.1.0", true},
		{"0.1.0", "0.1.0", true},
		{"0.1.0", "0.2.0", true},
		{"0.10.0", "0.9.9", false},
		{"1.0.0", "0.99.99", false},
		{"1.0.0", "1.0.0-rc.1", false},
		{"1.0.0-rc.2", "1.0.0-rc.10", true},
		{"1.0.0-alpha", "1.0.0-1", false},
		{"1.0.0", "1.0.0+build.5", true},
		{"2.0.0", "not-a-version", false},
	}
	for _, c := range cases {
		err := Definition{ID: "a.b", MinAgentVersion: c.min}.CheckAgentVersion(c.agent)
		if (err == nil) != c.ok {
			t.Errorf("min %q, agent %q: %v, want ok=%v", c.min, c.agent, err, c.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), c.min) || !strings.Contains(err.Error(), c.agent)) {
			t.Errorf("error %q does not name both versions", err)
		}
	}
}
