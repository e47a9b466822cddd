package output

import (
	"bufio"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// jsonWriter prints json (one object: "rows", then the status members) or jsonl (one
// row object a line, then one status object). Rows stream out as they arrive: json
// writes its opening and each row at once and closes the array at the end, so a
// command of a million rows holds none of them in memory.
type jsonWriter struct {
	w     *bufio.Writer
	lines bool // jsonl
	kinds kinds
	n     int // rows written
	buf   []byte
}

func newJSONWriter(w io.Writer, lines bool) *jsonWriter {
	return &jsonWriter{w: bufio.NewWriterSize(w, 64<<10), lines: lines, kinds: newKinds(nil)}
}

func (j *jsonWriter) Declare(decl []sdk.RowKind) { j.kinds = newKinds(decl) }

func (j *jsonWriter) Rows(batch []string) error {
	for _, r := range batch {
		b := j.buf[:0]
		switch {
		case j.lines:
		case j.n == 0:
			b = append(b, "{\"rows\":[\n"...)
		default:
			b = append(b, ",\n"...)
		}
		b = appendRow(b, j.kinds.cut(r))
		if j.lines {
			b = append(b, '\n')
		}
		j.n++
		j.buf = b
		_, _ = j.w.Write(b) // a failed write shows at the flush
	}
	return nil
}

func (j *jsonWriter) Result(res sdk.Result) error {
	b := j.buf[:0]
	switch {
	case j.lines:
		b = append(b, '{')
	case j.n == 0:
		b = append(b, `{"rows":[],`...)
	default:
		b = append(b, "\n],"...)
	}
	b = append(b, `"status":`...)
	b = appendString(b, res.Status.String())
	b = append(b, `,"completeness":`...)
	b = appendString(b, res.Completeness.String())
	b = append(b, `,"provenance":`...)
	b = appendString(b, res.Provenance)
	b = append(b, `,"rc":`...)
	b = strconv.AppendInt(b, int64(res.Code), 10)
	b = append(b, "}\n"...)
	j.buf = b
	_, _ = j.w.Write(b)
	return j.w.Flush()
}

func (j *jsonWriter) AgentError(msg string) int { return agentError(j, msg) }

// agentError answers an agent-side failure in w's format with the very row and
// trailer capture.Printer.AgentError prints.
func agentError(w Writer, msg string) int {
	_ = w.Rows([]string{"error|" + rows.Line(msg)})
	_ = w.Result(agentErrorResult)
	return agentErrorResult.Code
}

// appendRow writes r as {"kind":K,"fields":{NAME:VALUE,...}} when its kind's declared
// columns name its fields, else as {"kind":K,"values":[VALUE,...]}. Values are
// strings, as the row carries them; the column types are in describe.
func appendRow(b []byte, r row) []byte {
	b = append(b, `{"kind":`...)
	b = appendString(b, r.kind)
	if r.names != nil {
		b = append(b, `,"fields":{`...)
		for i, v := range r.values {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, r.names[i])
			b = append(b, ':')
			b = appendString(b, v)
		}
		return append(b, "}}"...)
	}
	b = append(b, `,"values":[`...)
	for i, v := range r.values {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, v)
	}
	return append(b, "]}"...)
}

const hex = "0123456789abcdef"

// appendU writes r (at most U+FFFF) as a JSON \uXXXX escape.
func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// appendString writes s as a JSON string that is valid UTF-8 and holds nothing a
// terminal would act on, so the output is safe on a terminal as well as in jq: each
// invalid byte becomes U+FFFD (as in the capture format and on the wire, where the SDK
// already replaced them), and every character rows.Hidden names (C0 and C1 controls,
// DEL, U+2028, U+2029, the bidi overrides and other invisible format characters) is a
// \u escape (a surrogate pair above U+FFFF), which a JSON reader turns back into that
// very character: the value is exact, only its spelling is safe.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r > 0xffff && rows.Hidden(r):
			hi, lo := utf16.EncodeRune(r)
			b = appendU(appendU(b, hi), lo)
		case rows.Hidden(r):
			b = appendU(b, r)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
