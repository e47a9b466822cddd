package identity

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxTokenBytes bounds an enrollment token file: a token is a line, not a document.
const maxTokenBytes = 4 << 10

// ReadTokenFile reads the enrollment token from path: a regular file (no link
// followed) only root or the agent's user can change, holding one line of printable
// text; surrounding white space (a final newline) is dropped. exposed says who else
// can read the file, nil when no one can.
func ReadTokenFile(path string) (token string, exposed error, err error) {
	f, fi, err := safefile.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	if err := safefile.TrustedFile(f, fi, false); err != nil {
		return "", nil, fmt.Errorf("%s is %w", path, err)
	}
	b, err := safefile.ReadAll(f, fi, maxTokenBytes)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	token = strings.TrimSpace(string(b))
	switch {
	case token == "":
		return "", nil, fmt.Errorf("%s is empty", path)
	case !utf8.ValidString(token):
		return "", nil, fmt.Errorf("%s is not valid UTF-8", path)
	case strings.IndexFunc(token, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return "", nil, fmt.Errorf("%s holds more than one line or a control character: a token is one line of text", path)
	}
	return token, safefile.Private(f, fi), nil
}
