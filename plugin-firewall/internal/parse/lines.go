package parse

import "strings"

// lines splits tool output into lines with every carriage return removed, so output
// written with CRLF line ends (or with stray CRs) reads the same as plain LF output.
func lines(b []byte) []string {
	s := string(b)
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r", "")
	}
	return strings.Split(s, "\n")
}
