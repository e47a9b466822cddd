package output

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuzugo/yuzu/agent/internal/capture"
	"github.com/yuzugo/yuzu/sdk"
)

// hostileRows are rows as a careless or malicious plugin may send them (after the
// wire, which allows only valid UTF-8, and before it, for a writer used elsewhere).
var hostileRows = []string{
	`entry|file|a\|b.txt|last|with|pipes`,
	"entry|dir|\x1b[2J\x00\x7f\u009b|\xff\xfe",
	"entry|short",
	"summary|2",
	"error|plugin said: \x1b]0;owned\x07",
	"mystery|x|y\tz",
	"unknown action: nope",
	"bare",
	"bare|extra",
}

var hostileDecl = []sdk.RowKind{
	{Kind: "entry", Columns: []sdk.Column{{Name: "type"}, {Name: "name"}, {Name: "note"}}},
	{Kind: "summary", Columns: []sdk.Column{{Name: "count", Type: sdk.TypeInt32}}},
	{Kind: "bare"},
	{Kind: "twice", Columns: []sdk.Column{{Name: "a"}, {Name: "a"}}},
}

var hostileResult = sdk.Result{Code: 3, Status: sdk.StatusConstrained, Completeness: sdk.CompletenessPartial,
	Provenance: "x:y\nerror|forged\n[result_status] OK / FULL \xff"}

// jsonRow is a row object as a JSON reader sees it.
type jsonRow struct {
	Kind   string            `json:"kind"`
	Fields map[string]string `json:"fields"`
	Values []string          `json:"values"`
}

type jsonStatus struct {
	Status       string `json:"status"`
	Completeness string `json:"completeness"`
	Provenance   string `json:"provenance"`
	RC           *int   `json:"rc"`
}

// wantRows are hostileRows as a reader gets them back: each field as the plugin meant
// it, `\|` unescaped in every field but the last, invalid bytes as U+FFFD.
var wantRows = []jsonRow{
	{Kind: "entry", Fields: map[string]string{"type": "file", "name": "a|b.txt", "note": "last|with|pipes"}},
	{Kind: "entry", Fields: map[string]string{"type": "dir", "name": "\x1b[2J\x00\x7f\u009b", "note": "\uFFFD\uFFFD"}},
	{Kind: "entry", Values: []string{"short"}},
	{Kind: "summary", Fields: map[string]string{"count": "2"}},
	{Kind: "error", Fields: map[string]string{"message": "plugin said: \x1b]0;owned\x07"}},
	{Kind: "mystery", Values: []string{"x", "y\tz"}},
	{Kind: "error", Fields: map[string]string{"message": "unknown action: nope"}}, // the SDK's answer to no such action
	{Kind: "bare", Fields: map[string]string{}},
	{Kind: "bare", Values: []string{"extra"}},
}

func write(t *testing.T, f Format, decl []sdk.RowKind, batch []string, res sdk.Result) string {
	t.Helper()
	var b bytes.Buffer
	w := New(f, &b)
	if decl != nil {
		w.Declare(decl)
	}
	if err := w.Rows(batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Result(res); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestParse(t *testing.T) {
	for name, want := range map[string]Format{"": Capture, "capture": Capture, "json": JSON, "jsonl": JSONL, "table": Table} {
		if got, err := Parse(name); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"JSON", "yaml", " json", "json\x1b"} {
		if _, err := Parse(name); err == nil || strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("Parse(%q): want an error with the name escaped, got %v", name, err)
		}
	}
}

// TestCaptureIsThePrinter: the default format is the capture package's, byte for byte,
// declarations or not.
func TestCaptureIsThePrinter(t *testing.T) {
	var want bytes.Buffer
	p := capture.New(&want)
	_ = p.Rows(hostileRows)
	_ = p.Result(hostileResult)
	if got := write(t, Capture, hostileDecl, hostileRows, hostileResult); got != want.String() {
		t.Errorf("capture differs from the capture printer:\n%q\nwant\n%q", got, want.String())
	}
	want.Reset()
	capture.New(&want).AgentError("boom\nerror|forged")
	var got bytes.Buffer
	if rc := New(Capture, &got).AgentError("boom\nerror|forged"); rc != 1 || got.String() != want.String() {
		t.Errorf("agent error: rc %d\n%q\nwant\n%q", rc, got.String(), want.String())
	}
}

// checkSafe: the output is valid UTF-8 and holds no control character but the newline
// that ends its lines (nor, in JSON, the line separators some readers split at).
func checkSafe(t *testing.T, out string) {
	t.Helper()
	checkPrintable(t, out, true)
}

// checkPrintable is checkSafe with a tab, U+2028 and U+2029 allowed unless strict: the
// table's trailer shows the provenance as the capture format does, and a terminal
// moves no cursor for them. (Table cells escape tabs; TestTable checks that.)
func checkPrintable(t *testing.T, out string, strict bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output is not valid UTF-8: %q", out)
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n' && (strict || r != '\t')) || (r >= 0x7f && r < 0xa0) || (strict && (r == 0x2028 || r == 0x2029)) {
			t.Fatalf("control %U in output %q", r, out)
		}
	}
}

func TestJSONHostileRows(t *testing.T) {
	out := write(t, JSON, hostileDecl, hostileRows, hostileResult)
	checkSafe(t, out)
	var got struct {
		Rows []jsonRow `json:"rows"`
		jsonStatus
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	if dec.More() {
		t.Errorf("more than one JSON value in %q", out)
	}
	if !reflect.DeepEqual(got.Rows, wantRows) {
		t.Errorf("rows:\n%q\nwant\n%q", got.Rows, wantRows)
	}
	checkStatus(t, got.jsonStatus, hostileResult)
}

func checkStatus(t *testing.T, got jsonStatus, res sdk.Result) {
	t.Helper()
	want := string([]rune(res.Provenance)) // each invalid byte a U+FFFD
	if got.Status != res.Status.String() || got.Completeness != res.Completeness.String() || got.Provenance != want || got.RC == nil || *got.RC != res.Code {
		t.Errorf("status object %+v (rc %v), want %s / %s / %q rc %d", got, got.RC, res.Status, res.Completeness, want, res.Code)
	}
}

func TestJSONLHostileRows(t *testing.T) {
	out := write(t, JSONL, hostileDecl, hostileRows, hostileResult)
	checkSafe(t, out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(hostileRows)+1 {
		t.Fatalf("%d lines for %d rows and the status:\n%s", len(lines), len(hostileRows), out)
	}
	var got []jsonRow
	for _, l := range lines[:len(lines)-1] {
		var r jsonRow
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, r)
	}
	if !reflect.DeepEqual(got, wantRows) {
		t.Errorf("rows:\n%q\nwant\n%q", got, wantRows)
	}
	var st jsonStatus
	dec := json.NewDecoder(strings.NewReader(lines[len(lines)-1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, st, hostileResult)
}

func TestJSONNoRows(t *testing.T) {
	res := sdk.Result{Status: sdk.StatusOK, Completeness: sdk.CompletenessFull}
	if got, want := write(t, JSON, nil, nil, res), `{"rows":[],"status":"OK","completeness":"FULL","provenance":"","rc":0}`+"\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	if got, want := write(t, JSONL, nil, nil, res), `{"status":"OK","completeness":"FULL","provenance":"","rc":0}`+"\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

// TestAgentErrorEveryFormat: an agent-side failure is the same row and trailer in
// every format: error|<message> with CR and LF folded, UNDECLARED / UNKNOWN, rc 1.
func TestAgentErrorEveryFormat(t *testing.T) {
	msg := "plugin not found: x\ny"
	var b bytes.Buffer
	if rc := New(JSON, &b).AgentError(msg); rc != 1 {
		t.Errorf("rc %d", rc)
	}
	want := `{"rows":[` + "\n" + `{"kind":"error","fields":{"message":"plugin not found: x y"}}` + "\n" +
		`],"status":"UNDECLARED","completeness":"UNKNOWN","provenance":"","rc":1}` + "\n"
	if b.String() != want {
		t.Errorf("json:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	New(Table, &b).AgentError(msg)
	if want := "KIND   MESSAGE\nerror  plugin not found: x y\n\n[result_status] UNDECLARED / UNKNOWN\n[rc] 1\n"; b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestTable(t *testing.T) {
	out := write(t, Table, hostileDecl, hostileRows, hostileResult)
	checkPrintable(t, out, false)
	if strings.Contains(out, "\t") {
		t.Errorf("a tab in the table:\n%s", out)
	}
	want := `KIND   TYPE  NAME                 NOTE
entry  file  a|b.txt              last|with|pipes
entry  dir   \x1b[2J\x00\x7f\x9b  ` + "\uFFFD\uFFFD" + `

KIND   FIELD1
entry  short

KIND     COUNT
summary  2

KIND   MESSAGE
error  plugin said: \x1b]0;owned\x07
error  unknown action: nope

KIND     FIELD1  FIELD2
mystery  x       y\x09z

KIND
bare

KIND  FIELD1
bare  extra

[result_status] CONSTRAINED / PARTIAL / x:y error|forged [result_status] OK / FULL ` + "\uFFFD" + `
[rc] 3
`
	if out != want {
		t.Errorf("table:\n%s\nwant\n%s", out, want)
	}
}

// TestTableBounded: past maxTableRows the tables so far are printed and new ones
// begin, so no row is held back or lost.
func TestTableBounded(t *testing.T) {
	batch := make([]string, maxTableRows+2)
	for i := range batch {
		batch[i] = "summary|" + strings.Repeat("9", i%7)
	}
	out := write(t, Table, hostileDecl, batch, sdk.Result{})
	if n := strings.Count(out, "KIND"); n != 2 {
		t.Errorf("%d headers, want 2", n)
	}
	if n := strings.Count(out, "summary"); n != len(batch) {
		t.Errorf("%d rows printed, want %d", n, len(batch))
	}
}

// FuzzJSON: whatever rows, declarations and provenance, json and jsonl decode, hold
// one row object per row, and are safe to print.
func FuzzJSON(f *testing.F) {
	f.Add("entry|a\\|b|c\x01summary|1\x01\xff|\x1b", "entry", "type,name", "p\n\xfe")
	f.Add("", "", "", "")
	f.Add("k|\\", "k", "a", "\u2028")
	f.Fuzz(func(t *testing.T, joined, kind, columns, provenance string) {
		batch := strings.Split(joined, "\x01")
		var cols []sdk.Column
		for _, c := range strings.Split(columns, ",") {
			cols = append(cols, sdk.Column{Name: c})
		}
		decl := []sdk.RowKind{{Kind: kind, Columns: cols}}
		res := sdk.Result{Code: 1, Provenance: provenance}
		out := write(t, JSON, decl, batch, res)
		checkSafe(t, out)
		var got struct {
			Rows []jsonRow `json:"rows"`
			jsonStatus
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("json %q: %v", out, err)
		}
		if len(got.Rows) != len(batch) {
			t.Fatalf("%d rows for %d", len(got.Rows), len(batch))
		}
		checkStatus(t, got.jsonStatus, res)
		out = write(t, JSONL, decl, batch, res)
		checkSafe(t, out)
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("jsonl line %q: %v", sc.Text(), err)
			}
			n++
		}
		if n != len(batch)+1 {
			t.Fatalf("%d jsonl lines for %d rows", n, len(batch))
		}
		checkPrintable(t, write(t, Table, decl, batch, res), false)
	})
}

// TestJQ: the jq an operator pipes into reads every json and jsonl output and gets
// the fields back as the plugin meant them.
func TestJQ(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed (make test installs it with apt-get): the JSON decoder tests above stand in for it")
	}
	for _, c := range []struct {
		format Format
		filter string
		want   string
	}{
		{JSON, `[.rows[] | select(.kind == "entry") | .fields.name // .values[0]] | @json`, `["a|b.txt","\u001b[2J\u0000\u007f` + "\u009b" + `","short"]`},
		{JSON, `.rc, .status, .completeness, .provenance`, "3\nCONSTRAINED\nPARTIAL\nx:y\nerror|forged\n[result_status] OK / FULL \uFFFD"},
		{JSONL, `select(.kind == null) | .rc`, "3"},
		{JSONL, `select(.kind == "entry" and .fields != null) | .fields.note | @json`, `"last|with|pipes"` + "\n" + `"` + "\uFFFD\uFFFD" + `"`},
	} {
		out := write(t, c.format, hostileDecl, hostileRows, hostileResult)
		cmd := exec.Command(jq, "-r", c.filter)
		cmd.Stdin = strings.NewReader(out)
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("jq %s on %s output: %v\n%s", c.filter, c.format, err, out)
		}
		if g := strings.TrimSuffix(string(got), "\n"); g != c.want {
			t.Errorf("jq %s on %s:\n%s\nwant\n%s", c.filter, c.format, g, c.want)
		}
	}
}

// TestNothingReordersOrMisaligns: a bidi override, an isolate, a line separator and a
// zero-width space are escapes in every format; JSON readers still get the exact
// characters back; table columns count wide characters as two cells and combining
// marks as none, so every column starts where the header's does.
func TestNothingReordersOrMisaligns(t *testing.T) {
	decl := []sdk.RowKind{{Kind: "entry", Columns: []sdk.Column{{Name: "name"}, {Name: "size"}}}}
	names := []string{"invoice\u202efdp.exe", "日本語.txt", "e\u0301te\u2028x", "ad\u200bmin\U000e0041", "plain"}
	var batch []string
	for _, n := range names {
		batch = append(batch, "entry|"+n+"|1")
	}
	res := sdk.Result{Status: sdk.StatusOK, Completeness: sdk.CompletenessFull}
	for _, f := range []Format{Capture, Table, JSON, JSONL} {
		out := write(t, f, decl, batch, res)
		for _, r := range out {
			if r == '\u202e' || r == '\u2028' || r == '\u200b' || r == '\t' || r == 0xe0041 {
				t.Errorf("%v: %U reached the output:\n%s", f, r, out)
			}
		}
		if f == JSON || f == JSONL {
			var got []string
			for _, line := range strings.Split(out, "\n") {
				var r jsonRow
				if strings.HasPrefix(line, `{"kind":"entry"`) && json.Unmarshal([]byte(strings.TrimSuffix(line, ",")), &r) == nil {
					got = append(got, r.Fields["name"])
				}
			}
			if !reflect.DeepEqual(got, names) {
				t.Errorf("%v: names read back %q, want %q:\n%s", f, got, names, out)
			}
		}
		if f == Table {
			lines := strings.Split(out, "\n")
			col := strings.Index(lines[0], "SIZE")
			for _, l := range lines[1 : 1+len(names)] {
				if w := displayWidth(strings.TrimSuffix(l, "1")); w != col {
					t.Errorf("table: the size column of %q starts at cell %d, the header's at %d:\n%s", l, w, col, out)
				}
			}
		}
	}
}
