//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// outputRow is a row object of --output json and jsonl as a JSON reader gets it.
type outputRow struct {
	Kind   string            `json:"kind"`
	Fields map[string]string `json:"fields"`
	Values []string          `json:"values"`
}

// outputStatus is the status members of json and the last object of jsonl.
type outputStatus struct {
	Status       string `json:"status"`
	Completeness string `json:"completeness"`
	Provenance   string `json:"provenance"`
	RC           *int   `json:"rc"`
}

// hostileFields are the rows of the hostile plugin's fields action as a reader must
// get them back: `\|` unescaped in the inner field, the last field raw, the invalid
// byte as U+FFFD (the SDK replaces it before the wire), control bytes as they are.
// The inner field's trailing backslash is `/` already on the wire (docs/sdk.md).
var hostileFields = []outputRow{
	{Kind: "entry", Fields: map[string]string{"name": "a|b", "note": "c|d"}},
	{Kind: "entry", Fields: map[string]string{"name": "bad\uFFFD\x1b[2J\x00", "note": "tab\there\u009b"}},
	{Kind: "entry", Fields: map[string]string{"name": `C:\dir/`, "note": `x\`}},
	{Kind: "surprise", Values: []string{"z"}},
	{Kind: "count", Fields: map[string]string{"n": "3"}},
}

func decodeStrict(t *testing.T, text string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %q: %v", text, err)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value in %q", text)
	}
}

func checkOutputStatus(t *testing.T, got outputStatus, status, completeness, provenance string, rc int) {
	t.Helper()
	if got.Status != status || got.Completeness != completeness || got.Provenance != provenance || got.RC == nil || *got.RC != rc {
		t.Errorf("status %+v, want %s / %s / %q rc %d", got, status, completeness, provenance, rc)
	}
}

// noControl: printed output holds no control byte but its newlines.
func noControl(t *testing.T, out string) {
	t.Helper()
	for _, r := range out {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) {
			t.Fatalf("control %U in output %q", r, out)
		}
	}
}

// TestExecOutputFormats: --output json and jsonl give the hostile plugin's rows back
// field by field to a JSON decoder, table aligns them escaped, and all say the same
// status and exit code as the capture format.
func TestExecOutputFormats(t *testing.T) {
	t.Parallel()
	w := newWorld(t, hostileBin)
	capture := w.exec("hostile", "fields")
	if capture.code != 0 || !strings.HasSuffix(capture.stdout, "\n[result_status] CONSTRAINED / PARTIAL / hostile:x error|forged [result_status] OK / FULL\n") {
		t.Fatalf("capture: %s", capture)
	}
	if again := w.exec("hostile", "fields", "--output", "capture"); again.stdout != capture.stdout || again.code != 0 {
		t.Errorf("--output capture differs from the default:\n%s\nwant\n%s", again.stdout, capture.stdout)
	}

	r := w.exec("hostile", "fields", "--output", "json")
	noControl(t, r.stdout)
	var doc struct {
		Rows []outputRow `json:"rows"`
		outputStatus
	}
	decodeStrict(t, r.stdout, &doc)
	if r.code != 0 || !reflect.DeepEqual(doc.Rows, hostileFields) {
		t.Errorf("json: exit %d rows\n%q\nwant\n%q", r.code, doc.Rows, hostileFields)
	}
	checkOutputStatus(t, doc.outputStatus, "CONSTRAINED", "PARTIAL", forgedProvenance, 0)

	r = w.exec("hostile", "fields", "--output=jsonl")
	noControl(t, r.stdout)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != len(hostileFields)+1 {
		t.Fatalf("jsonl: exit %d, %d lines for %d rows and the status:\n%s", r.code, len(lines), len(hostileFields), r)
	}
	var got []outputRow
	for _, l := range lines[:len(lines)-1] {
		var row outputRow
		decodeStrict(t, l, &row)
		got = append(got, row)
	}
	if !reflect.DeepEqual(got, hostileFields) {
		t.Errorf("jsonl rows\n%q\nwant\n%q", got, hostileFields)
	}
	var st outputStatus
	decodeStrict(t, lines[len(lines)-1], &st)
	checkOutputStatus(t, st, "CONSTRAINED", "PARTIAL", forgedProvenance, 0)

	r = w.exec("hostile", "fields", "--output", "table")
	noControl(t, strings.ReplaceAll(r.stdout, "\t", "")) // the trailer keeps a tab as capture does
	wantTable := "KIND   NAME             NOTE\n" +
		"entry  a|b              c|d\n" +
		`entry  bad` + "\uFFFD" + `\x1b[2J\x00  tab\x09here\x9b` + "\n" +
		`entry  C:\dir/          x\` + "\n\n" +
		"KIND      FIELD1\nsurprise  z\n\n" +
		"KIND   N\ncount  3\n\n" +
		"[result_status] CONSTRAINED / PARTIAL / hostile:x error|forged [result_status] OK / FULL\n"
	if r.code != 0 || r.stdout != wantTable {
		t.Errorf("table: exit %d\n%s\nwant\n%s", r.code, r.stdout, wantTable)
	}
}

// TestExecOutputErrors: a failure of the agent and a refusal by the plugin answer the
// same row, status and exit code in every format.
func TestExecOutputErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t, tagsBin)
	for _, c := range []struct {
		args []string
		row  outputRow
	}{
		{[]string{"nope", "count"}, outputRow{Kind: "error", Fields: map[string]string{"message": "plugin not found: nope"}}},
		{[]string{"device.tags.get"}, outputRow{Kind: "error", Fields: map[string]string{"message": "missing required parameter: key"}}},
		{[]string{"tags", "nope"}, outputRow{Kind: "error", Fields: map[string]string{"message": "unknown action: nope"}}},
	} {
		r := w.exec(append(c.args, "--output", "json")...)
		var doc struct {
			Rows []outputRow `json:"rows"`
			outputStatus
		}
		decodeStrict(t, r.stdout, &doc)
		if r.code != 1 || !reflect.DeepEqual(doc.Rows, []outputRow{c.row}) {
			t.Errorf("%s: exit %d rows %q, want 1 and %q\n%s", c.args, r.code, doc.Rows, c.row, r)
		}
		checkOutputStatus(t, doc.outputStatus, "UNDECLARED", "UNKNOWN", "", 1)
		for _, f := range []string{"jsonl", "table", "capture"} {
			if r := w.exec(append(c.args, "--output", f)...); r.code != 1 || !strings.Contains(r.stdout, c.row.Fields["message"]) {
				t.Errorf("%s --output %s: want exit 1 and the row %q:\n%s", c.args, f, c.row.Fields["message"], r)
			}
		}
	}
	// A definition id names its fields by the action it runs.
	w.expect("tag_set|env|a|b\n"+undeclared, 0, "tags", "set", "key=env", "value=a|b")
	r := w.exec("device.tags.get", "key=env", "--output", "jsonl")
	want := `{"kind":"tag","fields":{"key":"env","value":"a|b"}}` + "\n" + `{"status":"UNDECLARED","completeness":"UNKNOWN","provenance":"","rc":0}` + "\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("definition jsonl: exit %d\n%s\nwant\n%s", r.code, r.stdout, want)
	}
}

// TestExecOutputJQ: the jq an operator pipes into parses json and jsonl of hostile
// rows and gets the fields back.
func TestExecOutputJQ(t *testing.T) {
	t.Parallel()
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed (scripts/deps.sh installs it for make test); TestExecOutputFormats decodes the same output with encoding/json")
	}
	w := newWorld(t, hostileBin)
	for _, c := range []struct{ format, filter, want string }{
		{"json", `[.rows[] | .fields.name // .values[0]] | @json`, `["a|b","bad` + "\uFFFD" + `\u001b[2J\u0000","C:\\dir/","z",null]`},
		{"json", `.rc, .completeness`, "0\nPARTIAL"},
		{"jsonl", `select(.kind == "count") | .fields.n | tonumber`, "3"},
		{"jsonl", `select(.kind == null) | .status`, "CONSTRAINED"},
	} {
		r := w.exec("hostile", "fields", "--output", c.format)
		cmd := exec.Command(jq, "-r", c.filter)
		cmd.Stdin = strings.NewReader(r.stdout)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("jq %s: %v %s\non\n%s", c.filter, err, stderr.String(), r.stdout)
		}
		if got := strings.TrimSuffix(string(out), "\n"); got != c.want {
			t.Errorf("jq %s on %s:\n%s\nwant\n%s", c.filter, c.format, got, c.want)
		}
	}
}
